/**
 * Where an elector's incarnation comes from: what tells its process apart
 * from every other in the store, whatever identity the user gave (see
 * `StoreShape.acquire`). Drawn once, when the elector is made.
 *
 * By default 16 bytes from the operating system's generator: Effect's default
 * `Random` is seeded with one `Math.random()`, about 32 bits, and two
 * processes given one identity must not draw one incarnation. The fleet
 * simulation provides its own, drawn from each process's seeded `Random`, so
 * that a seed replays the same run.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { randomBytes } from "node:crypto"

/** @internal */
export class Incarnations extends Context.Reference<Incarnations>()("effect-leaderelection/Incarnations", {
  defaultValue: (): { readonly draw: Effect.Effect<string> } => ({
    draw: Effect.sync(() => randomBytes(16).toString("hex"))
  })
}) {}

/** A new incarnation, from the fiber's {@link Incarnations}. */
export const draw: Effect.Effect<string> = Effect.flatMap(Incarnations, (incarnations) => incarnations.draw)
