import preact from "@preact/preset-vite";
import { defineConfig, type Plugin } from "vite";
import { headersFile } from "./shared/csp.js";

// Workers static assets apply the rules of dist/web/_headers to every file they serve (the file itself is
// not served); the values come from shared/csp.ts, which the LAN server uses too.
function securityHeaders(): Plugin {
  return {
    name: "lineup-security-headers",
    apply: "build",
    generateBundle() {
      this.emitFile({ type: "asset", fileName: "_headers", source: headersFile() });
    },
  };
}

// Builds the PWA in web/ into dist/web, which the Worker serves as static assets.
export default defineConfig({
  root: "web",
  plugins: [preact(), securityHeaders()],
  build: { outDir: "../dist/web", emptyOutDir: true, target: "es2022" },
  server: { port: 5173 },
});
