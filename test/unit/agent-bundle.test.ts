// The agent package's bundle (issue 30, packages/agent/build.mjs): built in memory with the package's own
// esbuild options, then read from esbuild's metafile — which npm packages and how much of our code each command
// loads before it runs. Regression: the command table imported every command statically, so `lineup --version`
// and every Claude Code PreToolUse hook loaded `ws`, the QR code and the whole client (and zod as ~100 files).
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, type BuildOptions, type Metafile } from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OUT = join(ROOT, "packages", "agent", "dist", "lib");

interface AgentBuild {
  BUNDLE: BuildOptions;
  BUNDLED: string[];
  importedPackages: (m: Metafile, files?: string[]) => string[];
  staticClosure: (m: Metafile, file: string) => string[];
  declarationPackages: (dir: string) => string[];
}

let meta: Metafile;
let b: AgentBuild;
/** The output file whose split point is the source module `src`. */
const outputOf = (src: string) => {
  const hit = Object.entries(meta.outputs).find(([, o]) => o.entryPoint === src);
  if (!hit) throw new Error(`no split point for ${src}`);
  return hit[0];
};
/** npm packages loaded before `src` runs, when the CLI's entry loads it. */
const packagesAt = (...srcs: string[]) => b.importedPackages(meta, [...new Set(srcs.flatMap((s) => b.staticClosure(meta, outputOf(s))))]);

beforeAll(async () => {
  b = (await import(pathToFileURL(join(ROOT, "packages", "agent", "build.mjs")).href)) as AgentBuild;
  meta = (await build({ ...b.BUNDLE, outdir: OUT, write: false })).metafile!;
});

describe("the agent package's bundle loads what a command needs", () => {
  it("regression (static command table): lineup --version loads no npm package at all", () => {
    expect(packagesAt("adapter/cli/main.ts")).toEqual([]);
  });

  it("regression (static command table): lineup hook imports no npm package — no ws, MCP SDK, Hono or QR code; zod is bundled in", () => {
    expect(packagesAt("adapter/cli/main.ts", "adapter/permissions/hooks.ts")).toEqual([]);
    expect(b.BUNDLED).toEqual(["zod"]);
    const hookInputs = b.staticClosure(meta, outputOf("adapter/permissions/hooks.ts")).flatMap((f) => Object.keys(meta.outputs[f]!.inputs));
    expect(hookInputs.some((src) => src.includes("node_modules/zod/"))).toBe(true);
  });

  it("the commands that need them still get ws, the MCP SDK and the LAN server's Hono", () => {
    expect(packagesAt("adapter/cli/connect.ts")).toContain("ws");
    expect(packagesAt("adapter/mcp/server.ts")).toContain("@modelcontextprotocol/server");
    expect(packagesAt("adapter/lan/server.ts")).toEqual(expect.arrayContaining(["hono", "@hono/node-server"]));
  });

  it("imports exactly the runtime dependencies packages/agent/package.json declares, at the root's ranges, besides zod for the declarations", () => {
    type Deps = { dependencies: Record<string, string>; optionalDependencies: Record<string, string> };
    const pkg = JSON.parse(readFileSync(join(ROOT, "packages", "agent", "package.json"), "utf8")) as Deps;
    const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Deps;
    // zod is bundled (the bundle never imports it) yet a dependency: the library's declarations are z.infer types.
    expect([...b.importedPackages(meta), "zod"].sort()).toEqual([...Object.keys(pkg.dependencies), ...Object.keys(pkg.optionalDependencies)].sort());
    for (const [name, range] of Object.entries(pkg.dependencies)) expect(range, name).toBe(root.dependencies[name]);
    expect(pkg.optionalDependencies).toEqual({ "node-datachannel": root.optionalDependencies["node-datachannel"] });
    expect(Object.keys(pkg.dependencies)).not.toContain("tsx");
  });

  it("reads the npm packages declaration files import, by package name, leaving relative paths and node: alone", () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-dts-"));
    mkdirSync(join(dir, "shared", "contract"), { recursive: true });
    writeFileSync(
      join(dir, "shared", "contract", "protocol.d.ts"),
      'import { z } from "zod";\nimport type { X } from "../y.js";\nexport type T = z.infer<typeof S>;\n',
    );
    writeFileSync(join(dir, "index.d.ts"), 'export type A = import("@scope/pkg/deep").A;\nimport "node:fs";\nexport { B } from "./b.js";\n');
    writeFileSync(join(dir, "notes.txt"), 'from "not-a-declaration"');
    expect(b.declarationPackages(dir)).toEqual(["@scope/pkg", "zod"]);
  });

  it("loads node-datachannel (optional) only with import() when a device offers, never before a command runs", () => {
    const ndcImports = Object.values(meta.outputs).flatMap((o) => o.imports.filter((i) => i.path === "node-datachannel"));
    expect(ndcImports.length).toBeGreaterThan(0);
    expect(ndcImports.every((i) => i.kind === "dynamic-import" && i.external)).toBe(true);
  });

  it("keeps every output in dist/lib, so the sources' paths relative to themselves land on what the build writes", () => {
    const dirs = new Set(Object.keys(meta.outputs).map((f) => relative(OUT, resolve(ROOT, f)).split("/").slice(0, -1).join("/")));
    expect([...dirs]).toEqual([""]);
    const sources = ["adapter/setup/index.ts", "adapter/permissions/policy-store.ts", "adapter/lan/server.ts"];
    const targets = sources.flatMap((s) =>
      [...readFileSync(join(ROOT, s), "utf8").matchAll(/new URL\("([^"]+)", import\.meta\.url\)/g)].map((m) =>
        relative(join(ROOT, "packages", "agent"), fileURLToPath(new URL(m[1] as string, pathToFileURL(join(OUT, "chunk.js"))))),
      ),
    );
    // build.mjs writes dist/bin/lineup.mjs (the package's bin) and dist/web (the PWA).
    expect(targets.sort()).toEqual(["dist/bin/lineup.mjs", "dist/bin/lineup.mjs", "dist/web"]);
    const pkg = JSON.parse(readFileSync(join(ROOT, "packages", "agent", "package.json"), "utf8")) as { bin: Record<string, string> };
    expect(pkg.bin.lineup).toBe("dist/bin/lineup.mjs");
  });
});
