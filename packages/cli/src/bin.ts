#!/usr/bin/env node
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import { main, untilClosed } from "./cli.js"

// Colours only for a terminal, and never with NO_COLOR (https://no-color.org).
const colours = (stream: NodeJS.WriteStream) => stream.isTTY === true && (process.env["NO_COLOR"] ?? "") === ""

NodeRuntime.runMain(
  Effect.raceFirst(
    main(process.argv, { stdout: colours(process.stdout), stderr: colours(process.stderr) }),
    untilClosed(process.stdout)
  ).pipe(Effect.provide(NodeContext.layer)),
  { disableErrorReporting: true }
)
