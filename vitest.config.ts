import { configDefaults, defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    // Real-server chaos runs separately: `npm run test:chaos`.
    exclude: [...configDefaults.exclude, "test/chaos/**"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    coverage: {
      provider: "v8",
      include: ["src/**/*.ts"],
      // The bin entry only hands process.argv to src/internal/cli.ts (tested
      // in-process); test/cli.test.ts spawns it, which coverage cannot see.
      exclude: ["src/bin/cli.ts"],
      reporter: ["text-summary", "text"],
      thresholds: {
        statements: 100
      }
    }
  }
})
