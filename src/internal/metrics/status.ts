import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Status } from "../../Elector.js"

/** @internal */
export const ErrorSummary = Schema.Struct({
  _tag: Schema.Literal("StoreError", "LeaseLost", "LeaseExpiredLocally"),
  message: Schema.String
})

// Absent values are `null` rather than missing keys, so that every field is
// always there for whoever reads the JSON (jq, a dashboard, a probe log).
/** @internal */
export const StatusFromJson = Schema.Struct({
  isLeader: Schema.Boolean,
  fence: Schema.OptionFromNullOr(Schema.BigInt),
  identity: Schema.String,
  leader: Schema.OptionFromNullOr(Schema.String),
  leaderFence: Schema.OptionFromNullOr(Schema.BigInt),
  leaderPayload: Schema.OptionFromNullOr(Schema.Uint8ArrayFromBase64),
  observedAt: Schema.OptionFromNullOr(Schema.Date),
  validUntil: Schema.OptionFromNullOr(Schema.Date),
  lastError: Schema.OptionFromNullOr(ErrorSummary),
  identityCollision: Schema.OptionFromNullOr(Schema.Date)
})

const encode = Schema.encodeSync(StatusFromJson)

/** @internal */
export const toJson = (status: Status): Schema.Schema.Encoded<typeof StatusFromJson> =>
  // The error classes carry a cause and a derived message: keep what reads well.
  encode({ ...status, lastError: Option.map(status.lastError, (e) => ({ _tag: e._tag, message: e.message })) })
