// Writes every ```ts block of a Markdown file to its own module:
// node readme-blocks.mjs README.md OUTDIR -> OUTDIR/readme-01.ts, ... (one line per block on stdout).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const [source, outDir] = process.argv.slice(2)
if (source === undefined || outDir === undefined) {
  console.error("usage: node readme-blocks.mjs README.md OUTDIR")
  process.exit(2)
}
mkdirSync(outDir, { recursive: true })
const lines = readFileSync(source, "utf8").split("\n")
let heading = ""
let block = null
let count = 0
for (const [index, line] of lines.entries()) {
  if (block === null) {
    if (line.startsWith("#")) heading = line.replace(/^#+\s*/, "")
    else if (line.trim() === "```ts") block = { start: index + 1, body: [] }
  } else if (line.trim() === "```") {
    count += 1
    const name = `readme-${String(count).padStart(2, "0")}`
    // Every block is a module of its own, even one without imports.
    writeFileSync(join(outDir, `${name}.ts`), `${block.body.join("\n")}\nexport {}\n`)
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
if (count === 0) {
  console.error(`${source}: no \`\`\`ts blocks`)
  process.exit(1)
}
