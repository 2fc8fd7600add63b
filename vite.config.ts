import preact from "@preact/preset-vite";
import { build } from "esbuild";
import { defineConfig, type Plugin } from "vite";
import { headersFile } from "./shared/edge/csp.js";

// Workers static assets apply the rules of dist/web/_headers to every file they serve (the file itself is
// not served); the values come from shared/edge/csp.ts, which the LAN server uses too.
function securityHeaders(): Plugin {
  return {
    name: "lineup-security-headers",
    apply: "build",
    generateBundle() {
      this.emitFile({ type: "asset", fileName: "_headers", source: headersFile() });
    },
  };
}

// The service worker (web/public/sw.js) is a classic script; its end-to-end part (web/src/sw-e2e.ts, the
// shared WebCrypto core and the IndexedDB store) is bundled into one IIFE it loads with importScripts.
function serviceWorkerE2E(): Plugin {
  return {
    name: "lineup-sw-e2e",
    apply: "build",
    async generateBundle() {
      const out = await build({ entryPoints: ["web/src/sw-e2e.ts"], bundle: true, format: "iife", target: "es2022", minify: true, write: false, legalComments: "none" });
      this.emitFile({ type: "asset", fileName: "sw-e2e.js", source: out.outputFiles[0]!.text });
    },
  };
}

// Builds the PWA in web/ into dist/web, which the Worker serves as static assets.
export default defineConfig({
  root: "web",
  plugins: [preact(), securityHeaders(), serviceWorkerE2E()],
  build: { outDir: "../dist/web", emptyOutDir: true, target: "es2022" },
  server: { port: 5173 },
});
