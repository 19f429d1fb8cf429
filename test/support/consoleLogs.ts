import { vi } from "vitest"

/**
 * Lines printed with console.log from now on, instead of printing them: what
 * Effect's default logger writes. Restore with `vi.restoreAllMocks()`.
 */
export const captureLogs = (): Array<string> => {
  const lines: Array<string> = []
  vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
    lines.push(args.map(String).join(" "))
  })
  return lines
}
