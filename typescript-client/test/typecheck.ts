// Type-level checks of the package's declarations (compiled by test/types.test.mjs with
// `tsc --noEmit`): what a TypeScript bot writes type-checks, and mistakes do not (each
// `@ts-expect-error` must meet an error, or tsc fails).
import {
  type Analysis, BoxfishClient, type CreateGameRequest, type GameEvent, SerialConflict,
  verifyWebhook,
} from "@boxfish/client";

const api = new BoxfishClient("http://127.0.0.1:8000");
const ok: CreateGameRequest = { game: "dots-and-boxes", width: 3, height: 3,
                                engine: { seat: 1, time_ms: 100 } };
// @ts-expect-error a Dots-and-Boxes game needs its width and height
const noSize: CreateGameRequest = { game: "dots-and-boxes" };
// @ts-expect-error no such game
const noGame: CreateGameRequest = { game: "chess" };

export async function bot(): Promise<unknown[]> {
  const game = await api.createGame(ok);
  const token: string = game.write_token;
  const analysis: Analysis = await api.analyse({ gameId: game.id, at: game.serial });
  const value: number = analysis.result.value;
  const best: number[] | null = analysis.result.best_move;
  // @ts-expect-error no such member of a result
  void analysis.result.nonsense;
  // @ts-expect-error the time is a number
  await api.analyse({ gameId: game.id, timeMs: "100" });
  const seen: GameEvent[] = [];
  for await (const event of api.events(game.id, { after: game.position ?? 0 })) {
    if (event.kind === "reset") {
      const position: string | null = event.game.position;
      // @ts-expect-error a reset has no move
      void event.move;
      void position;
    } else {
      const move: number[] = event.move;
      const player: 0 | 1 = event.player;
      void [move, player];
    }
    seen.push(event);
  }
  try {
    await api.play(game.id, [1, 1, 1], { serial: 1 });
  } catch (error) {
    if (error instanceof SerialConflict) {
      const current: number | null = error.currentSerial;
      void current;
    }
  }
  const event = verifyWebhook("whsec_c2VjcmV0", {}, "{}");
  if (event.type === "move.appended") {
    const serial: number = event.data.serial;
    void serial;
  }
  return [token, value, best, noSize, noGame, seen];
}
