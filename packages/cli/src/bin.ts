#!/usr/bin/env node
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import { main } from "./cli.js"

NodeRuntime.runMain(Effect.provide(main(process.argv), NodeContext.layer), { disableErrorReporting: true })
