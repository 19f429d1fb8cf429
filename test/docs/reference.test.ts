import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import ts from "typescript"
import { afterAll, describe, expect, it } from "vitest"
import * as Reference from "./reference.js"

// A package of two modules, one rendered and one internal, as docgen.json
// splits src/.
const project = (files: Record<string, string>): string => {
  const root = mkdtempSync(join(tmpdir(), "docs-check-"))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}
const config: Reference.DocgenConfig = { srcDir: "src", outDir: "docs", exclude: ["src/internal/**"] }
const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true
}
const roots: Array<string> = []
afterAll(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })))
const findingsOf = (files: Record<string, string>): Array<string> => {
  const root = project(files)
  roots.push(root)
  return Reference.sourceFindings(root, config, compilerOptions).map((f) => `${f.where}: ${f.problem}`)
}

describe("sourceFindings", () => {
  it("passes a module whose options are declared in it, each with a comment", () => {
    expect(findingsOf({
      "src/Store.ts": `
export interface StoreOptions {
  /** The table. Defaults to \`leases\`. */
  readonly table?: string
  /** Where it listens: a URL. Defaults to none. */
  readonly listen?: {
    /** A direct URL. */
    readonly url: string
  }
}
export const layer = (options: StoreOptions = {}): string => options.table ?? "leases"
`
    })).toEqual([])
  })

  it("fails an option without a comment, naming the function, the field and the fix", () => {
    expect(findingsOf({
      "src/Store.ts": `
export interface StoreOptions {
  /** The table. Defaults to \`leases\`. */
  readonly table?: string
  readonly maxConnections?: number
}
export const layer = (options: StoreOptions = {}): string => options.table ?? "leases"
`
    })).toEqual([
      "src/Store.ts:2: Store.layer(options): maxConnections: no comment: say what each does and its default"
    ])
  })

  it("fails options declared in a module the reference does not render, through an alias", () => {
    const findings = findingsOf({
      "src/internal/options.ts": `
export interface Options {
  /** The table. Defaults to \`leases\`. */
  readonly table?: string
}
`,
      "src/Store.ts": `
import type { Options } from "./internal/options.js"
/** The options. */
export type StoreOptions = Options
export const layer = (options: StoreOptions = {}): string => options.table ?? "leases"
`
    })
    expect(findings).toEqual([
      "src/internal/options.ts:2: Store.StoreOptions: table: declared in src/internal/options.ts, which the " +
      "reference does not render: declare the type in a public module (docgen prints its fields with their comments)"
    ])
  })

  it("fails a name that reaches a public module only through an export * of an internal one", () => {
    expect(findingsOf({
      "src/internal/url.ts": `export const parseUrl = (url: string): URL => new URL(url)\n`,
      "src/Store.ts": `export * from "./internal/url.js"\n`
    })).toEqual([
      "src/Store.ts: Store.parseUrl comes through an `export *` of a module the reference does not render: " +
      "export it by name, with a comment saying what it is"
    ])
  })
})

const page = (title: string, entries: Array<string>, body: string): string =>
  [
    "***",
    "",
    `title: ${title}`,
    "---",
    "",
    "- [utils](#utils)",
    ...entries.map((entry) => `  - [${entry}](#${entry.toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-")})`),
    "",
    body
  ].join("\n")

describe("resolveLinks", () => {
  const pages = new Map([
    [
      "stores/PgStore.ts.md",
      page(
        "PgStore.ts",
        ["make", "PgStore (type alias)"],
        "see {@link make}, {@link OperationTimeout}, {@link PgStore.ensureSchema}, {@link Elector.layer | the layer}\n```ts\n/** {@link make} */\n```"
      )
    ],
    ["stores/SqlStoreError.ts.md", page("SqlStoreError.ts", ["OperationTimeout (class)"], "")],
    ["Elector.ts.md", page("Elector.ts", ["layer"], "{@link nowhere}")]
  ])
  const resolved = Reference.resolveLinks(pages)

  it("links an entry of the page, of another page, a member through its type, and a module's entry", () => {
    const text = resolved.pages.get("stores/PgStore.ts.md")!
    expect(text).toContain("see [`make`](#make), [`OperationTimeout`](SqlStoreError.ts.md#operationtimeout-class), ")
    expect(text).toContain("[`PgStore.ensureSchema`](#pgstore-type-alias), [`the layer`](../Elector.ts.md#layer)")
    expect(text).toContain("/** make */")
    expect(text.startsWith("---\ntitle: PgStore.ts\n")).toBe(true)
  })

  it("reports a link that names nothing, and leaves it as written", () => {
    expect(resolved.findings).toEqual([{
      where: "Elector.ts.md",
      problem: "{@link nowhere} names no entry of the reference: name an export"
    }])
    expect(Reference.pageFindings(resolved.pages, "0.1.0", { path: "docs/index.md", text: "", toPages: "modules" }))
      .toContainEqual({ where: "Elector.ts.md", problem: "a {@link} is left as written" })
  })
})

describe("pageFindings", () => {
  const index = {
    path: "docs/index.md",
    text: "- [Elector](modules/Elector.ts.md)\n- [PgStore](modules/stores/PgStore.ts.md)",
    toPages: "modules"
  }

  it("passes pages listed by the index, at the package's version or older", () => {
    const pages = new Map([["Elector.ts.md", "Added in v0.1.0\n"], ["stores/PgStore.ts.md", "Added in v0.0.9\n"]])
    expect(Reference.pageFindings(pages, "0.1.0", index)).toEqual([])
  })

  it("fails a newer version, a bare export * and a page the index leaves out", () => {
    const pages = new Map([
      ["Elector.ts.md", "Added in v0.2.0\n"],
      ["stores/PgStore.ts.md", "Re-exports all named exports from the \"./pg/config.js\" module.\n"],
      ["Lease.ts.md", ""]
    ])
    expect(Reference.pageFindings(pages, "0.1.0", index)).toEqual([
      { where: "Elector.ts.md", problem: "\"Added in v0.2.0\" but the package is 0.1.0: say @since 0.1.0" },
      {
        where: "stores/PgStore.ts.md",
        problem: "`export * from \"./pg/config.js\"` has no description: say what it brings and where it is documented"
      },
      { where: "docs/index.md", problem: "does not list Lease.ts.md: add it to the module list" }
    ])
  })
})
