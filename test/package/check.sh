#!/usr/bin/env bash
# Pack-and-consume check: what a user gets from `npm install effect-leaderelection`.
#
# Packs the library (prepack builds it), installs the tarball into scratch
# consumers in a temp dir, and
#   - type-checks every ```ts block of README.md and docs/*.md with skipLibCheck: false,
#     under moduleResolution nodenext and bundler, and runs each block against
#     the shared PostgreSQL and MariaDB (a block still running after 15 s is
#     stopped with SIGTERM and counts as passed if it printed no error);
#   - runs the Effect and the MySQL quick starts until they lead, sends them
#     SIGTERM as a deploy does, and checks that each released its lease (the
#     row expired on the database's clock) rather than leaving it to run out;
#   - does the same in a consumer pinned to the oldest supported effect
#     (3.21.0) and checks that it holds exactly one copy of effect;
#   - installs every consumer but the oldest with README.md's own install
#     lines (extracted by install-lines.mjs, not restated), so a line that
#     npm refuses (ERESOLVE) fails the check; README=FILE checks another copy;
#   - in a consumer of the README's core and testing lines, type-checks and
#     runs every ```ts test block of docs/testing.md with vitest;
#   - checks that a consumer of the core and PgStore only (the README's core
#     and PostgreSQL lines) installs no mysql2,
#     @effect/cli or @effect/platform-node, that internal modules are not
#     exported, and that a store without its driver names the package to
#     install.
#   - checks that a consumer of the core and MysqlStore on mysql2 alone (no
#     @effect/sql-mysql2) type-checks (skipLibCheck: true) and runs README's
#     MySQL quick start;
#   - runs a Promise app whose `logger` is pino-shaped and checks the records
#     it receives: election, identity, fence and the error as fields;
#   - checks that timing refusals name a field and values that are accepted
#     (a bare-number lease, client-go's settings), and that the presets are;
#   - starts a program while its database is down (a throwaway PostgreSQL
#     started later): it keeps running, logs a WARN a minute per store at
#     most, and leads once the database is up;
# npm installs prefer the local cache (--prefer-offline).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/le-package.XXXXXX")
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
export MYSQL_URL=${MYSQL_URL:-mysql://root@127.0.0.1:3306/test}
# The README's examples create their tables in the shared databases: the ones
# absent now are dropped at the end (test/package/tables.mjs).
CREATED=$(node "$ROOT/test/package/tables.mjs" absent)
cleanup() {
  # shellcheck disable=SC2086 # one table per word
  node "$ROOT/test/package/tables.mjs" drop $CREATED || echo "warning: could not drop the examples' tables: $CREATED"
  [ -n "${KEEP:-}" ] && echo "work dir: $WORK (kept)" || rm -rf "$WORK"
}
trap cleanup EXIT
TSC="$ROOT/node_modules/.bin/tsc"
README=${README:-$ROOT/README.md}
OLDEST_EFFECT=3.21.0
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
step() { echo; echo "== $* (at ${SECONDS}s)"; }
install() { npm install --prefer-offline --no-audit --no-fund --loglevel=error "$@"; }

# readme_install DIR USE...: runs README's install line of each USE in DIR, as
# written there; the library is not on the registry, so its name stands for the tarball.
readme_install() {
  local dir=$1 use line
  shift
  for use in "$@"; do
    line=$(node "$ROOT/test/package/install-lines.mjs" "$README" "$use") || { fail "README install line: $use"; continue; }
    echo "\$ $line"
    line=$(sed -E "s#(^| )effect-leaderelection( |\$)#\1$TARBALL\2#" <<<"$line")
    (cd "$dir" && npm_config_prefer_offline=true npm_config_audit=false npm_config_fund=false \
      npm_config_loglevel=error bash -c "$line") || fail "README install line ($use) in $(basename "$dir"): $line"
  done
}

step "npm pack"
(cd "$ROOT" && npm pack --silent --pack-destination "$WORK" >/dev/null)
TARBALL=$(ls "$WORK"/effect-leaderelection-*.tgz)
listing=$(tar -tzf "$TARBALL")
for file in package/LICENSE package/README.md package/dist/index.js package/dist/index.d.ts \
  package/dist/stores/PgStore.d.ts package/dist/stores/MysqlStore.d.ts package/dist/promise.d.ts; do
  grep -qx "$file" <<<"$listing" || fail "tarball lacks $file"
done
cli=$(grep -E "/(bin|cli)(/|\.)" <<<"$listing" || true)
[ -z "$cli" ] || fail "tarball ships the CLI: $cli"
echo "$(wc -l <<<"$listing") files, $(du -h "$TARBALL" | cut -f1)"

node "$ROOT/test/package/readme-blocks.mjs" "$WORK/blocks" "$ROOT/README.md" "$ROOT"/docs/*.md >"$WORK/blocks.txt"
cat "$WORK/blocks.txt"

# consumer DIR: an ESM package with the README's and docs' blocks in src/.
consumer() {
  mkdir -p "$1/src"
  echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' >"$1/package.json"
  cp "$WORK"/blocks/*.ts "$1/src/"
}

# tsconfig DIR NAME RESOLUTION EXTRA [LIB]: strict, skipLibCheck false.
tsconfig() {
  local module=NodeNext lib=${5:-'"ES2022"'}
  [ "$3" = "bundler" ] && module=ESNext
  cat >"$1/$2" <<EOF
{
  "compilerOptions": {
    "target": "ES2022", "lib": [$lib], "types": ["node"],
    "module": "$module", "moduleResolution": "$3",
    "strict": true, "skipLibCheck": false, "outDir": "dist" $4
  },
  "include": ["src"]
}
EOF
}

typecheck() { # DIR TSCONFIG LABEL
  if (cd "$1" && "$TSC" -p "$2" >"$1/tsc.log" 2>&1); then echo "ok   type-check: $3"
  else fail "type-check: $3"; cat "$1/tsc.log"; fi
}

run_blocks() { # DIR LABEL: runs dist/readme-*.js side by side, each for 15 s at most
  local file name rc
  for file in "$1"/dist/readme-*.js; do
    name=$(basename "$file" .js)
    (cd "$1" && rc=0 && timeout --preserve-status -k 10 -s TERM 15 node "dist/$name.js" >"$name.out" 2>&1 || rc=$?
      echo "$rc" >"$name.rc") &
  done
  wait
  for file in "$1"/dist/readme-*.js; do
    name=$(basename "$file" .js)
    rc=$(cat "$1/$name.rc")
    # 143: still running at 15 s and stopped by SIGTERM, as a service would be.
    if { [ "$rc" = 0 ] || [ "$rc" = 143 ]; } && ! grep -qiE "error|fail|warn" "$1/$name.out"; then
      echo "ok   run: $2 $name (exit $rc, $(wc -l <"$1/$name.out") lines of output)"
    else
      fail "run: $2 $name (exit $rc)"; tail -20 "$1/$name.out"
    fi
  done
}

# remaining_ms DIR pg|mysql NAME: milliseconds left on the lease of election
# NAME in the default table (negative once expired or released), or "none".
remaining_ms() {
  (cd "$1" && node -e '
const [db, name] = process.argv.slice(1)
const read = async () => {
  if (db === "pg") {
    const client = new (require("pg").Client)({ connectionString: process.env.DATABASE_URL })
    await client.connect()
    const sql = "SELECT (EXTRACT(EPOCH FROM expires_at - now()) * 1000)::int AS ms FROM leader_election WHERE name = $1"
    const { rows } = await client.query(sql, [name])
    await client.end()
    return rows[0]?.ms
  }
  const connection = await require("mysql2/promise").createConnection(process.env.MYSQL_URL)
  const sql = "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) DIV 1000 AS ms FROM leader_election WHERE name = ?"
  const [rows] = await connection.query(sql, [name])
  await connection.end()
  return rows[0]?.ms
}
read().then((ms) => console.log(ms ?? "none"))' "$2" "$3")
}

# sigterm_check DIR LABEL HEADING pg|mysql PATTERN: runs the README block under
# HEADING until its output shows PATTERN (it leads), sends it SIGTERM as an
# orchestrator does, and checks that it exits and its lease of the election
# "invoice-reconciler" is released, not left to expire a lease later.
sigterm_check() {
  local block out pid rc waited=0 ms
  block=$(awk -F'\t' -v heading="$3" '$3 == heading { print $1; exit }' "$WORK/blocks.txt")
  out="$1/$block.sigterm.out"
  (cd "$1" && exec node "dist/$block.js") >"$out" 2>&1 &
  pid=$!
  until grep -q "$5" "$out" || [ "$waited" -ge 60 ]; do sleep 1; waited=$((waited + 1)); done
  if ! grep -q "$5" "$out"; then
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
    fail "SIGTERM: $2 $block ($3) never led within 60 s"; tail -20 "$out"; return
  fi
  kill -TERM "$pid" 2>/dev/null || true
  waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 20 ]; do sleep 1; waited=$((waited + 1)); done
  kill -KILL "$pid" 2>/dev/null || true
  rc=0 && wait "$pid" || rc=$?
  ms=$(remaining_ms "$1" "$4" invoice-reconciler)
  if [ "$rc" = 0 ] && [[ "$ms" =~ ^-?[0-9]+$ ]] && [ "$ms" -le 0 ]; then
    echo "ok   SIGTERM: $2 $block ($3, $4) exited 0 within ${waited} s, lease released (expired ${ms#-} ms ago)"
  else
    fail "SIGTERM: $2 $block ($3, $4): exit $rc after ${waited} s, lease ms left: $ms"; tail -20 "$out"
  fi
}

one_effect() { # DIR LABEL: exactly one copy of effect
  local copies
  copies=$(cd "$1" && npm ls effect --all --parseable | sort -u | wc -l)
  if [ "$copies" = 1 ]; then echo "ok   one copy of effect: $2 ($(cd "$1" && node -p 'require("effect/package.json").version'))"
  else fail "$2 has $copies copies of effect"; (cd "$1" && npm ls effect --all); fi
}

step "consumer on the latest effect: README blocks under nodenext and bundler"
LATEST="$WORK/latest"
consumer "$LATEST"
# Every README install line (the Node runtime's: @effect/platform-node at its
# effect 3 line, whose latest release is effect 4's), then the types the
# examples need besides.
readme_install "$LATEST" core PostgreSQL MySQL/MariaDB "Node runtime" testing
(cd "$LATEST" && install @types/ws @types/node@20)
# "DOM" and @types/ws: the indexes of @effect/platform and @effect/platform-node,
# which the HealthHttpApp example imports, reach declarations (KeyValueStore,
# Transferable, @effect/rpc's RpcClient, NodeSocketServer) that name DOM types
# (Storage, Transferable, MessagePort) and import "ws". That is their
# requirement under skipLibCheck false, not this library's: its own modules,
# HealthHttpApp and MysqlStore included, need only ES2022 and @types/node.
tsconfig "$LATEST" tsconfig.json nodenext "" '"ES2022", "DOM"'
tsconfig "$LATEST" tsconfig.bundler.json bundler ', "noEmit": true, "exactOptionalPropertyTypes": true' '"ES2022", "DOM"'
typecheck "$LATEST" tsconfig.json "latest, nodenext"
typecheck "$LATEST" tsconfig.bundler.json "latest, bundler (exactOptionalPropertyTypes)"
one_effect "$LATEST" latest
run_blocks "$LATEST" latest
sigterm_check "$LATEST" latest "Effect quick start" pg "under fence"
sigterm_check "$LATEST" latest "MySQL / MariaDB quick start" mysql "leading"

step "consumer pinned to the oldest supported effect ($OLDEST_EFFECT)"
OLDEST="$WORK/oldest"
consumer "$OLDEST"
# The @effect packages of that release line, at their oldest too (later patches need a later effect);
# @effect/platform-node 0.106.0's peers (cluster, rpc, workflow) pinned likewise.
(cd "$OLDEST" && install --save-exact "$TARBALL" "effect@$OLDEST_EFFECT" @effect/platform@0.96.0 @effect/experimental@0.60.0 \
  @effect/sql@0.51.0 @effect/sql-mysql2@0.52.0 @effect/sql-pg@0.52.1 @effect/platform-node@0.106.0 \
  @effect/cluster@0.58.0 @effect/rpc@0.75.0 @effect/workflow@0.18.0 pg @types/pg mysql2 @types/ws @types/node@20)
tsconfig "$OLDEST" tsconfig.json nodenext "" '"ES2022", "DOM"' # DOM, @types/ws: @effect/platform(-node)'s, as above
typecheck "$OLDEST" tsconfig.json "effect $OLDEST_EFFECT, nodenext"
one_effect "$OLDEST" "oldest"
run_blocks "$OLDEST" oldest

step "consumer of the core and PgStore only"
PGONLY="$WORK/pg-only"
mkdir -p "$PGONLY/src"
echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' >"$PGONLY/package.json"
cat >"$PGONLY/src/main.ts" <<'EOF'
import { Effect, Layer } from "effect"
import { Elector } from "effect-leaderelection"
import * as PgStore from "effect-leaderelection/stores/PgStore"

const url = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const live = Elector.layer({ name: `package-check-${process.pid}` }).pipe(
  Layer.provide(PgStore.layerFromUrl(url, { ensureSchema: true }))
)
const status = await Effect.runPromise(
  Effect.scoped(Effect.flatMap(Elector.Elector, (elector) => elector.status)).pipe(Effect.provide(live))
)
console.log(`identity ${status.identity}`)

// Internal modules are not part of the package's interface.
const internal = "effect-leaderelection/internal/election/participant"
const hidden = await import(internal).then(() => "importable", (e: { code?: string }) => e.code)
console.log(`internal: ${hidden}`)

// A store whose driver is absent names what to install.
const mysql = "effect-leaderelection/stores/MysqlStore"
console.log(await import(mysql).then(() => "MysqlStore loaded", (e: Error) => `${e.name}: ${e.message}`))
EOF
# PgStore's declarations name @effect/sql-pg's PgClient types: its users install
# pg and @effect/sql-pg, as README's PostgreSQL line says.
readme_install "$PGONLY" core PostgreSQL
(cd "$PGONLY" && install @types/node@20)
tsconfig "$PGONLY" tsconfig.json nodenext ""
typecheck "$PGONLY" tsconfig.json "core + PgStore, nodenext"
tree=$(cd "$PGONLY" && npm ls --all --parseable)
for unwanted in mysql2 @effect/cli @effect/platform-node @effect/sql-mysql2; do
  if grep -q "/node_modules/$unwanted$" <<<"$tree"; then fail "core + PgStore consumer installs $unwanted"; fi
done
echo "ok   npm ls --all: no mysql2, @effect/cli, @effect/platform-node, @effect/sql-mysql2"
echo "ok   installs: $(cd "$PGONLY" && npm ls --all --parseable | tail -n +2 | wc -l) packages, node_modules $(du -sh "$PGONLY/node_modules" | cut -f1) (typescript not included)"
out=$(cd "$PGONLY" && timeout -k 10 30 node dist/main.js 2>&1) || fail "core + PgStore program failed: $out"
echo "$out"
grep -q "^identity " <<<"$out" || fail "core + PgStore program printed no status"
grep -q "^internal: ERR_PACKAGE_PATH_NOT_EXPORTED$" <<<"$out" || fail "internal modules are importable"
grep -q "^MissingDriverError: MysqlStore needs the npm package mysql2: npm install mysql2" \
  <<<"$out" || fail "a missing driver is not named"

step "consumer of the core and MysqlStore only: mysql2, no @effect/sql-mysql2"
MYONLY="$WORK/mysql-only"
mkdir -p "$MYONLY/src"
echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' >"$MYONLY/package.json"
block=$(awk -F'\t' 'tolower($3) ~ /mysql/ && tolower($3) ~ /quick start/ { print $1; exit }' "$WORK/blocks.txt")
if [ -z "$block" ]; then fail "no MySQL quick start block in README.md"; else
  cp "$WORK/blocks/$block.ts" "$MYONLY/src/"
  # The quick start runs on @effect/platform-node's NodeRuntime.
  readme_install "$MYONLY" core "Node runtime"
  (cd "$MYONLY" && install mysql2 @types/node@20)
  # skipLibCheck true: MysqlStore's declarations name @effect/sql-mysql2's
  # MysqlClient type (the client `make` and `layer` take from context), which
  # an app checking libraries (skipLibCheck false) installs for its types.
  tsconfig "$MYONLY" tsconfig.json nodenext ""
  sed -i 's/"skipLibCheck": false/"skipLibCheck": true/' "$MYONLY/tsconfig.json"
  typecheck "$MYONLY" tsconfig.json "core + MysqlStore on mysql2 alone, nodenext, skipLibCheck"
  if (cd "$MYONLY" && npm ls --all --parseable | grep -q "/node_modules/@effect/sql-mysql2$"); then
    fail "the MysqlStore consumer installs @effect/sql-mysql2"
  else echo "ok   npm ls --all: no @effect/sql-mysql2"; fi
  run_blocks "$MYONLY" mysql-only
  grep -q "started leading" "$MYONLY/$block.out" || fail "the MySQL quick start on mysql2 alone never led"
fi

step "consumer of the core and the testing toolkit: docs/testing.md's vitest files"
TESTING="$WORK/testing"
mkdir -p "$TESTING/src"
echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' >"$TESTING/package.json"
node "$ROOT/test/package/readme-blocks.mjs" --tests "$TESTING/src" "$ROOT/docs/testing.md"
readme_install "$TESTING" core testing
(cd "$TESTING" && install @types/node@20)
tsconfig "$TESTING" tsconfig.json nodenext ', "noEmit": true'
typecheck "$TESTING" tsconfig.json "testing, nodenext"
if (cd "$TESTING" && timeout -k 10 300 npx --no-install vitest run --root src >vitest.out 2>&1); then
  echo "ok   vitest: $(grep -E "^ +Tests " "$TESTING/vitest.out" | tr -s ' ')"
else
  fail "vitest run of docs/testing.md's test blocks"; tail -40 "$TESTING/vitest.out"
fi

step "consumer of the Promise API with a pino-shaped logger: structured records"
LOGGED="$WORK/promise-logger"
mkdir -p "$LOGGED/src"
echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' >"$LOGGED/package.json"
cat >"$LOGGED/src/main.ts" <<'EOF'
import { Effect } from "effect"
import { MemoryStore, Store } from "effect-leaderelection"
import { createElector } from "effect-leaderelection/promise"

// pino's shape: a method per level taking (fields, message), and no `log` method.
const record = (level: string) => (fields: object, msg: string) => console.log(JSON.stringify({ level, msg, ...fields }))
const logger = {
  trace: record("trace"),
  debug: record("debug"),
  info: record("info"),
  warn: record("warn"),
  error: record("error"),
  fatal: record("fatal")
}

// A store whose renewals fail while `refuse` is set, as an unreachable database's would.
const memory = await Effect.runPromise(MemoryStore.make())
let refuse = false
const store: Store.StoreShape = {
  ...memory,
  renew: (...args) =>
    Effect.suspend(() =>
      refuse
        ? Effect.fail(
          new Store.StoreError({ operation: "renew", retryable: true, reason: "connection reset", cause: undefined })
        )
        : memory.renew(...args)
    )
}
const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20))
}
const elector = createElector({
  store,
  name: "package-logger",
  identity: "node-a",
  logger,
  leaseDuration: "5 seconds",
  renewInterval: "200 millis",
  operationTimeout: "1 second",
  safetyMargin: "1 second"
})
await elector.start()
await until(() => elector.isLeader())
refuse = true
await until(() => elector.status().lastError !== undefined)
refuse = false
await elector.stop()
EOF
readme_install "$LOGGED" core
(cd "$LOGGED" && install @types/node@20)
tsconfig "$LOGGED" tsconfig.json nodenext ""
typecheck "$LOGGED" tsconfig.json "Promise API with a pino-shaped logger, nodenext"
# Every line the app printed must be a record its logger received (Effect prints nothing of its own).
if (cd "$LOGGED" && timeout -k 10 60 node dist/main.js >records.out 2>&1) && node -e '
const records = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map((line) => JSON.parse(line))
const ours = { election: "package-logger", identity: "node-a" }
const wanted = [
  { level: "info", msg: "started leading under fence 1", fence: "1", ...ours },
  { level: "warn", msg: "renew failed (retryable): connection reset", error: "StoreError", retryable: true, ...ours },
  { level: "info", msg: "stopped leading under fence 1 (shutdown)", fence: "1", ...ours }
]
const missing = wanted.filter((w) => !records.some((r) => Object.entries(w).every(([key, value]) => r[key] === value)))
const unlabelled = records.filter((r) => r.election !== ours.election || r.identity !== ours.identity)
if (missing.length > 0 || unlabelled.length > 0) {
  console.error(`missing: ${JSON.stringify(missing)}\nunlabelled: ${JSON.stringify(unlabelled)}`)
  process.exit(1)
}
console.log(`ok   logger: ${records.length} structured records; election, identity, fence and error as fields`)
' "$LOGGED/records.out"; then :
else
  fail "Promise API with a pino-shaped logger"; tail -20 "$LOGGED/records.out"
fi

step "consumer's timing refusals name the field to change and values that fit (issue 40, a)"
REFUSALS="$WORK/refusals"
mkdir -p "$REFUSALS/src"
echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' >"$REFUSALS/package.json"
cat >"$REFUSALS/src/main.ts" <<'EOF'
import { Effect, Either } from "effect"
import { Elector } from "effect-leaderelection"

const validate = (config: Elector.ElectorConfig) => Effect.runSync(Effect.either(Elector.validate(config)))
let failures = 0
const check = (ok: boolean, what: string) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`)
  if (!ok) failures++
}
/** What a refusal proposes: each `{ field: "value", ... }`, and a `did you mean "value"?` for its field. */
const proposals = (field: string, reason: string): Array<Record<string, string>> => {
  const listed = [...reason.matchAll(/\{ ([^}]*) \}/g)].map(([, body]) =>
    Object.fromEntries([...body!.matchAll(/(\w+): "([^"]*)"/g)].map(([, f, value]) => [f!, value!]))
  )
  const meant = /did you mean "([^"]*)"\?/.exec(reason)
  return meant === null ? listed : [...listed, { [field]: meant[1]! }]
}
const refusal = (label: string, config: Elector.ElectorConfig) => {
  const result = validate(config)
  if (Either.isRight(result) || result.left._tag !== "InvalidConfig") return check(false, `${label}: refused`)
  const { field, message, reason } = result.left
  console.log(`     ${message}`)
  const found = proposals(field, reason)
  check(found.length > 0 && field in found[0]!, `${label}: names ${field} and a value for it`)
  for (const proposal of found) {
    check(Either.isRight(validate({ ...config, ...proposal })), `${label}: ${JSON.stringify(proposal)} is accepted`)
  }
}
// A client-go user's seconds, as bare numbers: milliseconds here.
refusal("a bare-number lease", { name: "jobs", leaseDuration: 15 })
// client-go's LeaseDuration and RenewDeadline, as a first reading maps them.
refusal("client-go's 15 s / 10 s", { name: "jobs", leaseDuration: "15 seconds", renewInterval: "10 seconds" })
refusal("client-go's, in bare numbers", { name: "jobs", leaseDuration: 15, renewInterval: 10, retryPeriod: 2 })
refusal("a 6 s lease renewed every 2 s", { name: "jobs", leaseDuration: "6 seconds", renewInterval: "2 seconds" })
// docs/operations.md's equivalent of client-go's defaults, and the presets.
check(
  Either.isRight(validate({
    name: "jobs",
    leaseDuration: "15 seconds",
    renewInterval: "2 seconds",
    retryPeriod: "2 seconds",
    safetyMargin: "5 seconds"
  })),
  "client-go's defaults, translated, are accepted"
)
for (const [name, preset] of Object.entries(Elector.timing)) {
  check(Either.isRight(validate({ name: "jobs", ...preset })), `Elector.timing.${name} is accepted`)
}
process.exitCode = failures === 0 ? 0 : 1
EOF
readme_install "$REFUSALS" core
(cd "$REFUSALS" && install @types/node@20)
tsconfig "$REFUSALS" tsconfig.json nodenext ', "exactOptionalPropertyTypes": true'
typecheck "$REFUSALS" tsconfig.json "timing refusals, nodenext (exactOptionalPropertyTypes)"
if out=$(cd "$REFUSALS" && timeout -k 10 30 node dist/main.js 2>&1); then echo "$out"
else echo "$out"; fail "timing refusals do not name a field and values that fit"; fi

step "consumer started with its database down: no crash loop, a WARN a minute at most, then it leads (issue 40, c)"
# A throwaway PostgreSQL on a port chosen now and started only once the
# program has run with nothing there for BOOT_DOWN seconds.
BOOT="$WORK/boot"
BOOT_DOWN=${BOOT_DOWN:-40}
mkdir -p "$BOOT/src"
echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' >"$BOOT/package.json"
cat >"$BOOT/src/main.ts" <<'EOF'
import { Effect, Layer, Stream } from "effect"
import { Elector } from "effect-leaderelection"
import * as PgStore from "effect-leaderelection/stores/PgStore"

const url = process.env.BOOT_URL!
// One store that creates the schema (ensureSchema), and one more with ten
// elections on it, as a process with many elections has: both started while
// nothing answers at url.
const withSchema = Elector.layer({ name: "boot-schema", ...Elector.timing.fast }).pipe(
  Layer.provide(PgStore.layerFromUrl(url, { ensureSchema: true }))
)
const many = Effect.gen(function*() {
  const { changes } = yield* Elector.joinAll(
    Array.from({ length: 10 }, (_, i) => ({ name: `boot-${i}`, ...Elector.timing.fast }))
  )
  const led = new Set<string>()
  yield* Stream.runForEach(changes, ({ name, status }) =>
    Effect.sync(() => {
      if (!status.isLeader || led.has(name)) return
      led.add(name)
      if (led.size === 10) console.log("all ten elections lead")
    }))
}).pipe(Effect.scoped, Effect.provide(PgStore.layerFromUrl(url)))
const schema = Effect.flatMap(Elector.Elector, (elector) =>
  Effect.flatMap(elector.leadership, (term) => Effect.log(`boot-schema leads under fence ${term.fence}`))
).pipe(Effect.zipRight(Effect.never), Effect.provide(withSchema))
Effect.runPromise(Effect.all([schema, many], { concurrency: "unbounded" })).catch((error) => {
  console.error("the program stopped:", error)
  process.exit(1)
})
EOF
readme_install "$BOOT" core PostgreSQL
(cd "$BOOT" && install @types/node@20)
tsconfig "$BOOT" tsconfig.json nodenext ""
typecheck "$BOOT" tsconfig.json "database down at boot, nodenext"
BOOT_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
BOOT_PORT=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
BOOT_PG="$WORK/boot-pg"
# initdb refuses to run as root: the server runs as postgres then.
boot_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$BOOT_PG" && { [ "$(id -u)" != 0 ] || { chmod 711 "$WORK" && chown postgres "$BOOT_PG"; }; }
(cd "$BOOT" && BOOT_URL="postgres://postgres@127.0.0.1:$BOOT_PORT/postgres" exec node dist/main.js) >"$BOOT/out" 2>&1 &
boot_pid=$!
sleep "$BOOT_DOWN"
# Log lines at WARN or above while nothing answered: one per store at most in
# under a minute (without the limit, one per poll of each of eleven elections).
down_lines=$(grep -cE "level=(WARN|ERROR|FATAL)" "$BOOT/out" || true)
if kill -0 "$boot_pid" 2>/dev/null; then echo "ok   still running after ${BOOT_DOWN} s with its database down"
else fail "the program exited while its database was down"; tail -20 "$BOOT/out"; fi
if [ "$down_lines" -le 2 ]; then echo "ok   ${down_lines} WARN/ERROR line(s) in ${BOOT_DOWN} s with its database down, two stores"
else fail "${down_lines} WARN/ERROR lines in ${BOOT_DOWN} s with its database down"; grep -E "level=(WARN|ERROR)" "$BOOT/out" | head -20; fi
if boot_pg "$BOOT_BIN/initdb" -D "$BOOT_PG/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$WORK/boot-initdb.log" 2>&1 \
  && boot_pg "$BOOT_BIN/pg_ctl" -D "$BOOT_PG/data" -l "$BOOT_PG/log" -w \
    -o "-p $BOOT_PORT -k $BOOT_PG -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null; then
  waited=0
  until grep -q "all ten elections lead" "$BOOT/out" && grep -q "boot-schema leads" "$BOOT/out" \
    || [ "$waited" -ge 60 ]; do sleep 1; waited=$((waited + 1)); done
  if grep -q "all ten elections lead" "$BOOT/out" && grep -q "boot-schema leads" "$BOOT/out"; then
    echo "ok   led ${waited} s after its database came up"
  else fail "never led within 60 s of its database coming up"; tail -20 "$BOOT/out"; fi
else fail "could not start a throwaway PostgreSQL with $BOOT_BIN"; cat "$WORK/boot-initdb.log"; fi
kill -TERM "$boot_pid" 2>/dev/null || true
wait "$boot_pid" 2>/dev/null || true
boot_pg "$BOOT_BIN/pg_ctl" -D "$BOOT_PG/data" -m immediate stop >/dev/null 2>&1 || true

step "the CLI package, built against the packed library, run through npx"
CLISRC="$WORK/cli-src"
mkdir -p "$CLISRC"
cp -r "$ROOT/packages/cli/src" "$ROOT/packages/cli/package.json" "$ROOT/packages/cli/README.md" "$ROOT/packages/cli/LICENSE" "$CLISRC/"
# Standalone build config: the library comes from the tarball, not from ../../src.
sed 's#"extends": "../../tsconfig.json"#"extends": "./tsconfig.base.json"#' "$ROOT/packages/cli/tsconfig.json" >"$CLISRC/tsconfig.json"
node -e 'const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); delete c.compilerOptions.paths;
  console.log(JSON.stringify({ compilerOptions: c.compilerOptions }))' "$ROOT/tsconfig.json" >"$CLISRC/tsconfig.base.json"
# npm pack runs prepack, the build; the package's devDependencies bring the compiler.
(cd "$CLISRC" && install "$TARBALL" && npm pack --silent --pack-destination "$WORK" >/dev/null) \
  || fail "the CLI package does not build"
CLITARBALL=$(ls "$WORK"/effect-leaderelection-cli-*.tgz 2>/dev/null || true)
if [ -n "$CLITARBALL" ]; then
  CLIUSER="$WORK/cli-user"
  mkdir -p "$CLIUSER" && echo '{ "name": "cli-user", "version": "1.0.0", "private": true }' >"$CLIUSER/package.json"
  (cd "$CLIUSER" && install "$TARBALL" "$CLITARBALL")
  for url in "$DATABASE_URL" "$MYSQL_URL"; do
    out=$(cd "$CLIUSER" && npx --no-install leaderelection status --json --url "$url" 2>&1) \
      && node -e 'JSON.parse(process.argv[1]).elections.length >= 0' "$out" \
      && echo "ok   npx leaderelection status --json --url ${url%%:*}://..." \
      || { fail "npx leaderelection status on ${url%%:*}"; echo "$out"; }
  done
  rc=0
  (cd "$CLIUSER" && set -o pipefail && npx --no-install leaderelection watch --url "$DATABASE_URL" --interval 1 | head -1 >/dev/null) || rc=$?
  [ "$rc" = 0 ] && echo "ok   leaderelection watch | head -1 exits 0" || fail "leaderelection watch | head -1 exited $rc"
fi

echo
if [ "$failures" = 0 ]; then echo "package check passed in ${SECONDS}s"; else echo "package check: $failures failure(s)"; exit 1; fi
