// Writes every ```ts block of the given Markdown files to a module of its own:
// node readme-blocks.mjs OUTDIR README.md docs/design.md ...
//   -> OUTDIR/readme-01.ts, ... for README.md, OUTDIR/readme-design-01.ts, ... for docs/design.md
// (one line per block on stdout: module, file:line, heading).
// With --tests first, the ```ts test blocks instead (vitest test files), to OUTDIR/test-<page>-01.test.ts, ...
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { basename, join } from "node:path"

const tests = process.argv[2] === "--tests"
const [outDir, ...sources] = process.argv.slice(tests ? 3 : 2)
const fence = tests ? "```ts test" : "```ts"
if (outDir === undefined || sources.length === 0) {
  console.error("usage: node readme-blocks.mjs [--tests] OUTDIR FILE.md...")
  process.exit(2)
}
mkdirSync(outDir, { recursive: true })
let total = 0
for (const source of sources) {
  const page = basename(source, ".md").toLowerCase()
  const prefix = tests ? `test-${page}` : page === "readme" ? "readme" : `readme-${page}`
  const lines = readFileSync(source, "utf8").split("\n")
  let heading = ""
  let block = null
  let count = 0
  for (const [index, line] of lines.entries()) {
    if (block === null) {
      if (line.startsWith("#")) heading = line.replace(/^#+\s*/, "")
      else if (line.trim() === fence) block = { start: index + 1, body: [] }
    } else if (line.trim() === "```") {
      count += 1
      const name = `${prefix}-${String(count).padStart(2, "0")}`
      // Every block is a module of its own, even one without imports.
      writeFileSync(join(outDir, `${name}${tests ? ".test" : ""}.ts`), `${block.body.join("\n")}\nexport {}\n`)
      console.log(`${name}\t${source}:${block.start}\t${heading}`)
      block = null
    } else {
      block.body.push(line)
    }
  }
  if (block !== null) {
    console.error(`${source}:${block.start}: unterminated code block`)
    process.exit(1)
  }
  total += count
}
if (total === 0) {
  console.error(`${sources.join(", ")}: no ${fence} blocks`)
  process.exit(1)
}
