/**
 * Reads the frontend (client-to-server) side of a PostgreSQL protocol stream:
 * enough to see which statements a driver names.
 */
export interface FrontendMessage {
  readonly type: string
  /** Parse: the statement name. Bind: the statement it binds. "" is the unnamed statement. */
  readonly statement?: string
  /** Parse: the statement's text. */
  readonly query?: string
}

const cstring = (buffer: Buffer, offset: number): [string, number] => {
  const end = buffer.indexOf(0, offset)
  return [buffer.toString("utf8", offset, end), end + 1]
}

export const frontendMessages = (stream: Buffer): ReadonlyArray<FrontendMessage> => {
  const messages: Array<FrontendMessage> = []
  // The startup message has no type byte: a length, then the payload.
  let offset = stream.readInt32BE(0)
  while (offset + 5 <= stream.length) {
    const type = String.fromCharCode(stream[offset]!)
    const length = stream.readInt32BE(offset + 1)
    const body = offset + 5
    if (type === "P") {
      const [statement, next] = cstring(stream, body)
      messages.push({ type, statement, query: cstring(stream, next)[0] })
    } else if (type === "B") {
      const [, next] = cstring(stream, body)
      messages.push({ type, statement: cstring(stream, next)[0] })
    } else {
      messages.push({ type })
    }
    offset += 1 + length
  }
  return messages
}
