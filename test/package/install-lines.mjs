// Prints the README's install command for one use, as written there:
// node install-lines.mjs README.md USE   (USE: core, PostgreSQL, MySQL/MariaDB, testing)
// The commands are the lines of the first ```sh block under "## Install",
// each ending in a comment "# USE: ...".
import { readFileSync } from "node:fs"

const [source, use] = process.argv.slice(2)
if (source === undefined || use === undefined) {
  console.error("usage: node install-lines.mjs README.md USE")
  process.exit(2)
}
const section = readFileSync(source, "utf8").split(/^## /m).find((s) => s.startsWith("Install\n"))
const block = section?.match(/^```sh\n([^]*?)^```$/m)?.[1]
if (block === undefined) {
  console.error(`${source}: no \`\`\`sh block under "## Install"`)
  process.exit(1)
}
const lines = block.split("\n").filter((line) => line.includes(`# ${use}:`))
if (lines.length !== 1) {
  console.error(`${source}: ${lines.length} install lines for "${use}" (one expected)`)
  process.exit(1)
}
console.log(lines[0].slice(0, lines[0].indexOf("#")).trim())
