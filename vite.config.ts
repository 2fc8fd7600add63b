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

// Issue 33: web/src/boot.ts is an entry of its own, loaded by index.html before the main bundle, so the session's
// socket is dialled once that small chunk is parsed (web/src/early.ts, shared with the main bundle as one module).
function bootFirst(): Plugin {
  return {
    name: "lineup-boot-first",
    apply: "build",
    enforce: "post",
    generateBundle(_, bundle) {
      const boot = Object.values(bundle).find((c) => c.type === "chunk" && c.isEntry && c.name === "boot");
      const html = bundle["index.html"];
      if (!boot || boot.type !== "chunk" || !html || html.type !== "asset") return;
      const tag = `<script type="module" crossorigin src="/${boot.fileName}"></script>`;
      html.source = String(html.source).replace(/(\s*)(<script type="module")/, `$1${tag}$1$2`);
    },
  };
}

// Builds the PWA in web/ into dist/web, which the Worker serves as static assets.
export default defineConfig({
  root: "web",
  plugins: [preact(), securityHeaders(), serviceWorker(), bootFirst()],
  build: {
    outDir: "../dist/web",
    emptyOutDir: true,
    target: "es2022",
    rollupOptions: { input: { index: "web/index.html", boot: "web/src/boot.ts" } },
  },
  server: { port: 5173 },
});
