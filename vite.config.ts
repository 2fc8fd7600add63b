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

// The service worker is two classic scripts, each bundled by esbuild into one IIFE: /sw.js from web/src/sw.ts
// (shell cache, Web Push; scope "/"), and its lazily loaded end-to-end part /sw-e2e.js from web/src/sw-e2e.ts
// (the shared WebCrypto core and the IndexedDB store), which sw.js loads with importScripts. The dev server
// builds them on request, so `npm run dev` serves the same files.
const SW_FILES: Record<string, string> = { "sw.js": "web/src/sw.ts", "sw-e2e.js": "web/src/sw-e2e.ts" };

async function bundleWorker(entry: string): Promise<string> {
  const out = await build({ entryPoints: [entry], bundle: true, format: "iife", target: "es2022", minify: true, write: false, legalComments: "none" });
  return out.outputFiles[0]!.text;
}

function serviceWorker(): Plugin {
  return {
    name: "lineup-sw",
    async generateBundle() {
      for (const [fileName, entry] of Object.entries(SW_FILES)) this.emitFile({ type: "asset", fileName, source: await bundleWorker(entry) });
    },
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        const entry = SW_FILES[(req.url ?? "").split("?")[0]!.slice(1)];
        if (!entry) return next();
        bundleWorker(entry).then(
          (js) => {
            res.setHeader("content-type", "text/javascript");
            res.end(js);
          },
          (e: unknown) => next(e),
        );
      });
    },
  };
}

// Issue 33: web/src/early.ts also as a classic script of its own (an esbuild IIFE, a hashed asset), which
// index.html runs first in <head>, before the stylesheet and the module scripts: the session's socket is dialled
// as soon as the service worker (or the network) hands the script over. A module script waits for the stylesheet
// and the end of parsing; this one waits for nothing (script-src 'self': no inline script). main.tsx imports the
// same module and dials only when this script did not (the dev server serves no such script).
function earlyDial(): Plugin {
  return {
    name: "lineup-early-dial",
    apply: "build",
    enforce: "post",
    async generateBundle(_, bundle) {
      const html = bundle["index.html"];
      if (!html || html.type !== "asset") return;
      const ref = this.emitFile({ type: "asset", name: "early.js", source: await bundleWorker("web/src/early.ts") });
      const tag = `<script src="/${this.getFileName(ref)}"></script>`;
      const source = String(html.source);
      const at = source.search(/\s*<script type="module"/);
      if (at < 0) this.error("index.html has no module script to put the early dial before");
      html.source = `${source.slice(0, at)}\n    ${tag}${source.slice(at)}`;
    },
  };
}

// Builds the PWA in web/ into dist/web, which the Worker serves as static assets.
export default defineConfig({
  root: "web",
  plugins: [preact(), securityHeaders(), serviceWorker(), earlyDial()],
  build: {
    outDir: "../dist/web",
    emptyOutDir: true,
    target: "es2022",
    rollupOptions: { input: { index: "web/index.html" } },
  },
  server: { port: 5173 },
});
