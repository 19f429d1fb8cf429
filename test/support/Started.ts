/**
 * A supervisor that counts the fibers started under it: how tests see that
 * the elector runs a call or a term without fibers of its own.
 */
import { Effect, Supervisor } from "effect"

export class Started extends Supervisor.AbstractSupervisor<number> {
  count = 0
  get value() {
    return Effect.sync(() => this.count)
  }
  override onStart() {
    this.count++
  }
}
