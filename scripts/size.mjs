// Prints the gzipped size of every built JS/CSS file and the initial JS total (budget: 60 KB gzipped).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const root = "dist/web";
const files = [];
(function walk(d) {
  for (const f of readdirSync(d)) {
    const p = join(d, f);
    if (statSync(p).isDirectory()) walk(p);
    else if (/\.(js|css|html|webmanifest)$/.test(f)) files.push(p);
  }
})(root);
const html = readFileSync(join(root, "index.html"), "utf8");
let initial = 0;
for (const f of files.sort()) {
  const raw = readFileSync(f);
  const gz = gzipSync(raw, { level: 9 }).length;
  const rel = f.slice(root.length + 1);
  const isInitial = f.endsWith(".js") && (html.includes(rel) || rel === "sw.js" ? !rel.endsWith("sw.js") : false);
  if (isInitial) initial += gz;
  console.log(`${rel.padEnd(40)} ${(raw.length / 1024).toFixed(1).padStart(8)} KB  ${(gz / 1024).toFixed(1).padStart(7)} KB gz${isInitial ? "  (initial)" : ""}`);
}
const budget = 60 * 1024;
console.log(`initial JavaScript: ${(initial / 1024).toFixed(1)} KB gzipped (budget ${budget / 1024} KB)`);
if (initial > budget) {
  console.error("over the initial JavaScript budget");
  process.exit(1);
}
