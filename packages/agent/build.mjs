#!/usr/bin/env node
// Builds the agent package `lineup-agent` (issue 30) from the repository's sources into packages/agent/dist:
//   dist/lib/    the CLI (cli.js) and the library (index.js), bundled and minified ESM for Node >= 20.6 by
//                esbuild, split at every dynamic import() so a command loads only its own code (the hook path
//                loads no `ws`, no MCP SDK, no LAN server, no QR code); npm packages stay imports (the package's
//                dependencies), except BUNDLED (zod)
//   dist/bin/    lineup.mjs, the `bin` (from src/lineup.mjs)
//   dist/types/  the library's declarations, emitted by tsc from the sources (never written by hand)
//   dist/web/    the built PWA for `lineup serve` (copied from the repository's dist/web: `npm run build` first)
// The layout mirrors the repository's (adapter/cli → dist/lib, adapter/bin → dist/bin, dist/web → dist/web), so
// the sources' `new URL("../bin/lineup.mjs" | "../../dist/web", import.meta.url)` hold in both.
// It refuses to build when the package's dependencies are not exactly the npm packages the bundle and the
// declarations import (zod: bundled into dist/lib, yet a dependency for its types), when a range differs from the root package.json's (the one lock file), or when the two versions differ.
// Run by `npm pack` (prepack) and `npm run build:agent`; `--quiet` prints only errors.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const out = join(here, "dist");
const readJson = (f) => JSON.parse(readFileSync(f, "utf8"));
const fail = (msg) => {
  process.stderr.write(`build:agent: ${msg}\n`);
  process.exit(1);
};

/**
 * npm packages bundled into dist/lib rather than imported from node_modules: zod, because loading it as ~100
 * ESM files costs more than the rest of the hook path (the PreToolUse budget, issue 30). Nothing of ours hands a
 * zod schema to a package that would need to share zod's instance: @hono/zod-validator only calls the schema's
 * own methods, and the MCP SDK brings its own zod (bench/startup.json, docs/adapter.md).
 */
export const BUNDLED = ["zod"];

/** A bare specifier's package name (`@scope/name/deep` → `@scope/name`). */
const packageOf = (spec) => (spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]);

/** Every npm package stays an import (a dependency of the package), except the BUNDLED ones. */
const externals = {
  name: "lineup-externals",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (a) =>
      a.path.startsWith("node:") || !BUNDLED.includes(packageOf(a.path)) ? { path: a.path, external: true } : undefined,
    );
  },
};

/** The bundle's esbuild options (test/unit/agent-bundle.test.ts builds with them too, in memory). */
export const BUNDLE = {
  absWorkingDir: root,
  entryPoints: { cli: "adapter/cli/main.ts", index: "adapter/client/index.ts" },
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20.6",
  plugins: [externals],
  chunkNames: "[name]-[hash]",
  minifySyntax: true,
  minifyWhitespace: true,
  // Minified, names too: parsing is most of what loading the hook path costs (a compile cache helps from the
  // second run on Node >= 22.1). Stack traces name minified functions; the repository's bin runs the sources.
  minifyIdentifiers: true,
  metafile: true,
  logLevel: "warning",
};

/** The npm packages the given outputs (default: all) import, by name (a deep import counts for its package). */
export function importedPackages(metafile, files = Object.keys(metafile.outputs)) {
  const used = new Set();
  for (const f of files) for (const i of metafile.outputs[f].imports) if (i.external && !i.path.startsWith("node:")) used.add(packageOf(i.path));
  return [...used].sort();
}

/** The npm packages the declaration files under `dir` import (`from "x"`, `import("x")`), by name. */
export function declarationPackages(dir) {
  const used = new Set();
  for (const f of readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((n) => n.endsWith(".d.ts")))
    for (const m of readFileSync(join(dir, f), "utf8").matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)["']([^"'.][^"']*)["']/gm))
      if (!m[1].startsWith("node:")) used.add(packageOf(m[1]));
  return [...used].sort();
}

/** The outputs that load before `file` runs: itself and its static imports, transitively (not its import()s). */
export function staticClosure(metafile, file) {
  const seen = new Set();
  const walk = (f) => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const i of metafile.outputs[f]?.imports ?? []) if (i.kind === "import-statement" && !i.external) walk(i.path);
  };
  walk(file);
  return [...seen];
}

async function main() {
  const quiet = process.argv.includes("--quiet");
  const pkg = readJson(join(here, "package.json"));
  const rootPkg = readJson(join(root, "package.json"));
  if (pkg.version !== rootPkg.version) fail(`version ${pkg.version} differs from the relay's ${rootPkg.version} (package.json): one release, one number`);
  const web = join(root, "dist", "web");
  if (!existsSync(join(web, "index.html"))) fail("dist/web/index.html is missing: build the PWA first (npm run build)");

  rmSync(out, { recursive: true, force: true });
  const result = await build({ ...BUNDLE, outdir: join(out, "lib") });
  const used = importedPackages(result.metafile);
  const declared = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})];
  const missing = used.filter((n) => !declared.includes(n));
  if (missing.length) fail(`the bundle imports ${missing.join(", ")}, not in packages/agent/package.json dependencies`);
  // An optional dependency (node-datachannel, issue 32) is optional at the root too, at the same range.
  for (const kind of ["dependencies", "optionalDependencies"])
    for (const n of Object.keys(pkg[kind] ?? {}))
      if (pkg[kind][n] !== rootPkg[kind]?.[n]) fail(`${n}: range ${pkg[kind][n]} differs from the root package.json's ${kind} (${rootPkg[kind]?.[n]})`);

  mkdirSync(join(out, "bin"), { recursive: true });
  copyFileSync(join(here, "src", "lineup.mjs"), join(out, "bin", "lineup.mjs"));
  chmodSync(join(out, "bin", "lineup.mjs"), 0o755);
  cpSync(web, join(out, "web"), { recursive: true });
  execFileSync(process.execPath, [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(here, "tsconfig.types.json")], { stdio: "inherit" });
  // The declarations' own npm imports (zod: the contract's types are z.infer of its schemas) must resolve from the
  // package alone: a package they name that is not a dependency turns every type from it into `any` for a
  // TypeScript user whose installer does not hoist it by chance (pnpm, or an MCP SDK without zod).
  const typed = declarationPackages(join(out, "types"));
  const untyped = typed.filter((n) => !declared.includes(n));
  if (untyped.length) fail(`the declarations (dist/types) import ${untyped.join(", ")}, not in packages/agent/package.json dependencies`);
  const unused = declared.filter((n) => !used.includes(n) && !typed.includes(n));
  if (unused.length) fail(`packages/agent/package.json lists ${unused.join(", ")}, which neither the bundle nor the declarations import`);
  // What each entry and split point loads before it runs (its static imports), in bytes: a look at the split.
  const startup = {};
  for (const [file, o] of Object.entries(result.metafile.outputs))
    if (o.entryPoint) startup[o.entryPoint] = staticClosure(result.metafile, file).reduce((n, f) => n + result.metafile.outputs[f].bytes, 0);
  writeFileSync(
    join(out, "meta.json"),
    `${JSON.stringify({ version: pkg.version, dependencies: used, typeDependencies: typed, startupBytes: startup }, null, 2)}\n`,
  );
  if (!quiet) process.stdout.write(`build:agent: ${pkg.name}@${pkg.version} in packages/agent/dist (imports ${used.join(", ")})\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
