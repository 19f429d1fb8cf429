/**
 * Builds an error without capturing a stack trace. For the errors expected
 * under load and made by the thousand (a shed poll, a call that timed out, a
 * driver error wrapped for the elector): their stack would show the runtime's
 * frames, never the cause, and capturing it costs ten times the rest of the
 * error. Their message and cause say what happened.
 *
 * @internal
 */
export const stackless = <A>(make: () => A): A => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}
