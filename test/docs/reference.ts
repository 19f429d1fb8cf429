/**
 * What `npm run docgen` checks after @effect/docgen wrote the API reference
 * (docs/modules/), and the one repair docgen leaves to us: its pages print
 * `{@link x}` as written, so the links are resolved here, against the
 * pages' own tables of contents.
 *
 * docgen itself refuses an export without `@since` or a description. What it
 * cannot see, and this module finds:
 * - an option or a field the reference does not show: docgen prints an
 *   interface's source text, field comments included, only when the
 *   interface is declared in a module it renders; a type alias to an
 *   interface in an excluded (internal) module shows its name alone;
 * - a name a public module exports through `export *` from a module the
 *   reference does not render, and a bare `export *` entry, which docgen
 *   prints with no content;
 * - a `{@link}` no page entry answers, a version newer than the package's,
 *   and a page that docs/index.md does not list.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, posix, relative } from "node:path"
import ts from "typescript"

/** One problem, where it is and what to do about it. */
export interface Finding {
  readonly where: string
  readonly problem: string
}

/** The part of docgen.json this check reads. */
export interface DocgenConfig {
  readonly srcDir: string
  readonly outDir: string
  readonly exclude: ReadonlyArray<string>
}

const isExcluded = (file: string, exclude: ReadonlyArray<string>): boolean =>
  exclude.some((pattern) => {
    if (!pattern.endsWith("/**")) throw new Error(`docgen.json exclude: only "dir/**" patterns are read (${pattern})`)
    return file.startsWith(pattern.slice(0, -2))
  })

const walk = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]
  )

/** The modules docgen renders, relative to `root`, in posix form. */
export const renderedModules = (root: string, config: DocgenConfig): Array<string> =>
  walk(join(root, config.srcDir))
    .map((file) => relative(root, file).split("\\").join("/"))
    .filter((file) => file.endsWith(".ts") && !file.endsWith(".d.ts") && !isExcluded(file, config.exclude))
    .sort()

const position = (root: string, node: ts.Node): string => {
  const file = node.getSourceFile()
  const { line } = file.getLineAndCharacterOfPosition(node.getStart())
  return `${relative(root, file.fileName).split("\\").join("/")}:${line + 1}`
}

const moduleName = (file: string, config: DocgenConfig): string =>
  posix.relative(config.srcDir, file).replace(/\.ts$/, "")

/** The names a module exports by declaration or by name (what docgen gives an entry of its own). */
const namedHere = (source: ts.SourceFile): Set<string> => {
  const names = new Set<string>()
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement) && statement.exportClause !== undefined) {
      if (ts.isNamedExports(statement.exportClause)) {
        for (const element of statement.exportClause.elements) names.add(element.name.text)
      } else names.add(statement.exportClause.name.text)
    } else if (
      ts.canHaveModifiers(statement) &&
      ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      if (ts.isVariableStatement(statement)) {
        for (const declaration of statement.declarationList.declarations) {
          if (ts.isIdentifier(declaration.name)) names.add(declaration.name.text)
        }
      } else if ("name" in statement && statement.name !== undefined && ts.isIdentifier(statement.name as ts.Node)) {
        names.add((statement.name as ts.Identifier).text)
      }
    }
  }
  return names
}

/**
 * The findings in the sources:
 * - every name a rendered module exports has a page entry of its own, or is
 *   documented on the page of the rendered module it comes from;
 * - every field of an exported type, and of the types of its fields, is
 *   declared in a rendered module, so its page shows it;
 * - every option (a field of a parameter of an exported function, and of its
 *   fields in turn) is declared in a rendered module and has a comment.
 * Fields of one declaration are reported together.
 */
export const sourceFindings = (
  root: string,
  config: DocgenConfig,
  compilerOptions: ts.CompilerOptions
): Array<Finding> => {
  const modules = renderedModules(root, config)
  const program = ts.createProgram(modules.map((file) => join(root, file)), { ...compilerOptions, noEmit: true })
  const checker = program.getTypeChecker()
  const src = join(root, config.srcDir)
  const pathOf = (node: ts.Node): string => relative(root, node.getSourceFile().fileName).split("\\").join("/")
  const rendered = (node: ts.Node): boolean => modules.includes(pathOf(node))
  const inSrc = (node: ts.Node): boolean => node.getSourceFile().fileName.startsWith(src)
  // Per problem and declaring type: the first label that reached it, and its fields.
  const problems = new Map<string, { where: string; label: string; problem: string; fields: Array<string> }>()
  const report = (declaration: ts.Declaration, label: string, problem: string, field: string): void => {
    const owner = declaration.parent
    const key = `${problem}@${pathOf(owner)}:${owner.pos}`
    const entry = problems.get(key) ?? { where: position(root, owner), label, problem, fields: [] }
    if (!entry.fields.includes(field)) entry.fields.push(field)
    problems.set(key, entry)
  }
  const seen = new Set<string>()
  // What a caller writes (`options`, `config`, an `...Options` or
  // `...Config` type), as opposed to a value the library made and hands back.
  const isOptions = (name: string, type: ts.Type): boolean =>
    /^(options|config)$/.test(name) ||
    /(Options|Config)$/.test((type.aliasSymbol ?? type.getSymbol())?.name ?? "")

  const visit = (type: ts.Type, label: string, option: boolean, depth: number): void => {
    const key = `${option}:${checker.typeToString(type)}:${(type as { id?: number }).id}`
    if (depth > 4 || seen.has(key)) return
    seen.add(key)
    if (type.isUnion() || type.isIntersection()) {
      for (const part of type.types) visit(part, label, option, depth)
      return
    }
    if (!(type.flags & ts.TypeFlags.Object) || type.getCallSignatures().length > 0) return
    const objectFlags = (type as ts.ObjectType).objectFlags
    const typeArguments = [
      ...(type.aliasTypeArguments ?? []),
      ...(objectFlags & ts.ObjectFlags.Reference ? checker.getTypeArguments(type as ts.TypeReference) : [])
    ]
    for (const argument of typeArguments) visit(argument, label, option, depth)
    const declarations = type.getSymbol()?.declarations ?? []
    // Classes (tagged errors, service tags) are documented by their own
    // entries, other packages' types by theirs; a mapped type of another
    // package (`Config.Wrap`) keeps the fields of ours.
    if (declarations.some((declaration) => ts.isClassLike(declaration))) return
    if (!(objectFlags & ts.ObjectFlags.Mapped) && !declarations.some(inSrc)) return
    for (const property of checker.getPropertiesOfType(type)) {
      const declaration = property.declarations?.[0]
      // A union's tag names itself.
      if (declaration === undefined || !inSrc(declaration) || property.name === "_tag") continue
      if (!rendered(declaration)) {
        report(
          declaration,
          label,
          `declared in ${pathOf(declaration)}, which the reference does not render: ` +
            "declare the type in a public module (docgen prints its fields with their comments)",
          property.name
        )
      } else if (option && property.getDocumentationComment(checker).length === 0) {
        report(declaration, label, "no comment: say what each does and its default", property.name)
      }
      visit(checker.getTypeOfSymbolAtLocation(property, declaration), `${label}.${property.name}`, option, depth + 1)
    }
  }

  const findings: Array<Finding> = []
  for (const file of modules) {
    const source = program.getSourceFile(join(root, file))
    const symbol = source && checker.getSymbolAtLocation(source)
    if (source === undefined || symbol === undefined) continue
    const module = moduleName(file, config)
    const named = namedHere(source)
    for (const exported of checker.getExportsOfModule(symbol)) {
      const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
      const declaration = target.declarations?.[0]
      if (declaration === undefined) continue
      const label = `${module}.${exported.name}`
      if (!named.has(exported.name) && !rendered(declaration)) {
        findings.push({
          where: file,
          problem: `${label} comes through an \`export *\` of a module the reference does not render: ` +
            "export it by name, with a comment saying what it is"
        })
      }
      if (target.flags & (ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias)) {
        visit(checker.getDeclaredTypeOfSymbol(target), label, false, 0)
      } else if (target.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Variable)) {
        for (const signature of checker.getTypeOfSymbol(target).getCallSignatures()) {
          for (const parameter of signature.getParameters()) {
            const type = checker.getTypeOfSymbolAtLocation(parameter, parameter.valueDeclaration ?? declaration)
            visit(type, `${label}(${parameter.name})`, isOptions(parameter.name, type), 0)
          }
        }
      }
    }
  }
  for (const { fields, label, problem, where } of problems.values()) {
    findings.push({ where, problem: `${label}: ${fields.join(", ")}: ${problem}` })
  }
  return findings
}

/** A page entry: what docgen's table of contents links to. */
interface Entry {
  readonly page: string
  readonly anchor: string
}

/** The entries of a page, by name, from its table of contents. */
export const entriesOf = (text: string): Map<string, string> => {
  const entries = new Map<string, string>()
  for (const match of text.matchAll(/^ {2,}- \[([^\]]+)\]\((#[^)]+)\)$/gm)) {
    const name = match[1]!.replace(/ \([^)]*\)$/, "")
    if (!entries.has(name)) entries.set(name, match[2]!)
  }
  return entries
}

/** The module a page documents: `stores/PgStore.ts.md` -> `PgStore`. */
const pageModule = (page: string): string => posix.basename(page, ".ts.md")

/**
 * Rewrites every `{@link target}` / `{@link target | text}` of the pages
 * (paths relative to the reference's directory) into a Markdown link to the
 * entry it names: on the same page first, then the page of that name, then
 * the one other page with such an entry. In code blocks (signatures) the
 * name alone. A target nothing answers is a finding, and stays as written.
 */
export const resolveLinks = (
  pages: ReadonlyMap<string, string>
): { readonly pages: Map<string, string>; readonly findings: Array<Finding> } => {
  const entries = new Map([...pages].map(([page, text]) => [page, entriesOf(text)]))
  const byModule = new Map([...pages.keys()].map((page) => [pageModule(page), page]))
  const findings: Array<Finding> = []
  const find = (page: string, target: string): Entry | undefined => {
    const [head, ...rest] = target.split(".")
    const here = entries.get(page)!
    if (here.has(target)) return { page, anchor: here.get(target)! }
    if (rest.length > 0 && here.has(head!)) return { page, anchor: here.get(head!)! }
    const modulePage = byModule.get(head!)
    if (modulePage !== undefined) {
      const anchor = rest.length === 0 ? "" : entries.get(modulePage)!.get(rest.join("."))
      if (anchor !== undefined) return { page: modulePage, anchor }
    }
    const elsewhere = [...entries].filter(([, names]) => names.has(head!))
    if (elsewhere.length === 1) return { page: elsewhere[0]![0], anchor: elsewhere[0]![1].get(head!)! }
    return undefined
  }
  const out = new Map<string, string>()
  for (const [page, text] of pages) {
    let inCode = false
    const lines = text.split("\n").map((line) => {
      if (line.startsWith("```")) inCode = !inCode
      return line.replace(/\{@link\s+([^\s|}]+)\s*(?:\|\s*)?([^}]*)\}/g, (written, target: string, label: string) => {
        const text = label.trim() === "" ? target : label.trim()
        if (inCode) return text
        const entry = find(page, target)
        if (entry === undefined) {
          findings.push({ where: page, problem: `${written} names no entry of the reference: name an export` })
          return written
        }
        const path = entry.page === page ? "" : posix.relative(posix.dirname(page), entry.page)
        return `[\`${text}\`](${path}${entry.anchor})`
      })
    })
    // docgen's formatter turns the front matter's opening `---` into `***`.
    out.set(page, lines.join("\n").replace(/^\*\*\*\n\n/, "---\n"))
  }
  return { pages: out, findings }
}

const versionParts = (version: string): Array<number> => version.split(".").map(Number)

const newer = (version: string, than: string): boolean => {
  const a = versionParts(version)
  const b = versionParts(than)
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0)
  return false
}

/**
 * What the finished pages must not show: a `{@link}` left as written, a
 * version newer than the package's, a bare `export *` entry (docgen's
 * placeholder sentence in place of a description), a page the index does
 * not list.
 */
export const pageFindings = (
  pages: ReadonlyMap<string, string>,
  version: string,
  index: { readonly path: string; readonly text: string; readonly toPages: string }
): Array<Finding> => {
  const findings: Array<Finding> = []
  for (const [page, text] of pages) {
    if (text.includes("{@link")) findings.push({ where: page, problem: "a {@link} is left as written" })
    for (const match of text.matchAll(/^Added in v(\S+)$/gm)) {
      if (newer(match[1]!, version)) {
        findings.push({
          where: page,
          problem: `"Added in v${match[1]}" but the package is ${version}: say @since ${version}`
        })
      }
    }
    for (const match of text.matchAll(/^Re-exports all named exports from the (\S+) module\.$/gm)) {
      findings.push({
        where: page,
        problem: `\`export * from ${match[1]}\` has no description: say what it brings and where it is documented`
      })
    }
    if (page !== "index.md" && !index.text.includes(`](${posix.join(index.toPages, page)})`)) {
      findings.push({ where: index.path, problem: `does not list ${page}: add it to the module list` })
    }
  }
  return findings
}

/** The pages under `dir`, by path relative to it. */
export const readPages = (dir: string): Map<string, string> =>
  new Map(
    (existsSync(dir) ? walk(dir) : [])
      .filter((file) => file.endsWith(".md"))
      .map((file) => [relative(dir, file).split("\\").join("/"), readFileSync(file, "utf8")])
  )

/** The compiler options docgen parses with (its `parseCompilerOptions`, a tsconfig path). */
export const compilerOptionsOf = (tsconfig: string): ts.CompilerOptions => {
  const read = ts.readConfigFile(tsconfig, (path) => ts.sys.readFile(path))
  return ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(tsconfig)).options
}
