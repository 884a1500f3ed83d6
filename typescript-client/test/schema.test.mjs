// The committed types (src/schema.ts) are what openapi-typescript makes of openapi.yaml now:
// a change to openapi.yaml without `npm run generate` fails here.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));

test("src/schema.ts is generated from the current openapi.yaml", () => {
  const dir = mkdtempSync(join(tmpdir(), "boxfish-schema-"));
  try {
    const fresh = join(dir, "schema.ts");
    execFileSync(process.execPath, [join(PACKAGE, "node_modules/openapi-typescript/bin/cli.js"),
                                    join(PACKAGE, "../openapi.yaml"), "--output", fresh],
                 { cwd: PACKAGE, stdio: "pipe" });
    const committed = readFileSync(join(PACKAGE, "src/schema.ts"), "utf8");
    assert.ok(committed.includes('"/v1/games/{id}/moves"'));
    assert.ok(committed === readFileSync(fresh, "utf8"),
              "src/schema.ts is stale: run `npm run generate` in typescript-client/ and commit it");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
