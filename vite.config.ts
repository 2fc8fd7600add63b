import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

// Builds the PWA in web/ into dist/web, which the Worker serves as static assets.
export default defineConfig({
  root: "web",
  plugins: [preact()],
  build: { outDir: "../dist/web", emptyOutDir: true, target: "es2022" },
  server: { port: 5173 },
});
