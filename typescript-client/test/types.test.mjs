// The package's declarations serve a TypeScript bot: test/typecheck.ts compiles with
// `tsc --noEmit --strict` against the built package (its @ts-expect-error lines must meet
// errors too).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));

test("a TypeScript bot type-checks against the declarations, and its mistakes do not", () => {
  const run = spawnSync(process.execPath, [
    join(PACKAGE, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict",
    "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
    "--types", "node", "--skipLibCheck", join(PACKAGE, "test/typecheck.ts"),
  ], { cwd: PACKAGE, encoding: "utf8" });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});
