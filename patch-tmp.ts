const counts = new Map<string, number>()
const orig = Error.captureStackTrace
Error.captureStackTrace = function(obj: any, ...rest: any[]) {
  const k = (obj?._tag ?? obj?.constructor?.name ?? "?") + " " + (new Error().stack ?? "").split("\n").slice(3, 6).map((l) => l.trim().slice(0, 90)).join(" | ")
  counts.set(k, (counts.get(k) ?? 0) + 1)
  return (orig as any).call(Error, obj, ...rest)
} as any
process.on("exit", () => { for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(v, k) })
await import("./bench/overhead.ts")
