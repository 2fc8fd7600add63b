// Prints the gzipped size of every built file of the PWA and the initial JavaScript total: the JS that
// index.html loads itself (module scripts and modulepreload links). Lazy chunks and the service worker
// are not initial. Budget: 60 KB gzipped (docs/pwa.md); over it, the build fails.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const root = "dist/web";
const BUDGET = 60 * 1024;
const files = [];
(function walk(d) {
  for (const f of readdirSync(d)) {
    const p = join(d, f);
    if (statSync(p).isDirectory()) walk(p);
    else if (/\.(js|css|html|webmanifest|svg|png)$/.test(f)) files.push(p);
  }
})(root);
const html = readFileSync(join(root, "index.html"), "utf8");
const initialJs = new Set([...html.matchAll(/<(?:script[^>]*\bsrc|link[^>]*\brel="modulepreload"[^>]*\bhref)="\/?([^"]+\.js)"/g)].map((m) => m[1]));
let initial = 0;
for (const f of files.sort()) {
  const raw = readFileSync(f);
  const gz = gzipSync(raw, { level: 9 }).length;
  const rel = f.slice(root.length + 1);
  const isInitial = initialJs.has(rel);
  if (isInitial) initial += gz;
  console.log(
    `${rel.padEnd(40)} ${(raw.length / 1024).toFixed(1).padStart(8)} KB  ${(gz / 1024).toFixed(1).padStart(7)} KB gz${isInitial ? "  (initial)" : ""}`,
  );
}
console.log(`initial JavaScript: ${(initial / 1024).toFixed(1)} KB gzipped (budget ${BUDGET / 1024} KB)`);
if (initialJs.size === 0) {
  console.error("no initial script found in index.html");
  process.exit(1);
}
if (initial > BUDGET) {
  console.error("over the initial JavaScript budget");
  process.exit(1);
}
