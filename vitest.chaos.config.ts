import { defineConfig } from "vitest/config"

// The chaos suite starts real servers and breaks them on purpose: one file at
// a time, with timeouts sized for server start-up and crash recovery.
export default defineConfig({
  test: {
    include: ["test/chaos/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000
  }
})
