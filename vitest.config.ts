import { fileURLToPath } from "node:url"
import { configDefaults, defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // packages/cli imports the library by its package name: serve it from src/.
    alias: [
      { find: /^effect-leaderelection$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
      {
        find: /^effect-leaderelection\/(.*)$/,
        replacement: fileURLToPath(new URL("./src/", import.meta.url)) + "$1.ts"
      }
    ]
  },
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
      reporter: ["text-summary", "text"],
      thresholds: {
        statements: 100
      }
    }
  }
})
