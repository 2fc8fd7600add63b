// The agent package's install size as bench/lib/startup.ts reports it (issue 30: install size and dependency
// count beside the start-up figures). Regression: node-datachannel (the direct path, an optional dependency)
// was added after the figures were taken, and a global `npm install -g <tarball>` installs it anyway (npm
// ignores --omit=optional there, npm/cli#8284), so the one total silently grew by its native binary. The bench
// now reports what every install gets and what only the optional dependencies need, apart.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { optionalOnly } from "../../bench/lib/startup.js";

/** A hoisted node_modules: name → its `dependencies` and `optionalDependencies`. */
function tree(pkgs: Record<string, { deps?: string[]; optional?: string[] }>): string {
  const nm = join(mkdtempSync(join(tmpdir(), "lineup-nm-")), "node_modules");
  for (const [name, p] of Object.entries(pkgs)) {
    mkdirSync(join(nm, ...name.split("/")), { recursive: true });
    const obj = (l: string[] = []) => Object.fromEntries(l.map((d) => [d, "*"]));
    writeFileSync(join(nm, ...name.split("/"), "package.json"), JSON.stringify({ name, dependencies: obj(p.deps), optionalDependencies: obj(p.optional) }));
  }
  mkdirSync(join(nm, ".bin"), { recursive: true });
  return nm;
}

describe("the optional dependencies' share of the agent package's install", () => {
  it("is every installed package the required dependencies never reach, their platform binaries included", () => {
    const nm = tree({
      ws: {},
      "@modelcontextprotocol/server": { deps: ["zod", "@modelcontextprotocol/core"] },
      "@modelcontextprotocol/core": { deps: ["zod"] },
      zod: {},
      "node-datachannel": { deps: ["detect-libc"], optional: ["@node-datachannel/linux-x64-gnu"] },
      "detect-libc": {},
      "@node-datachannel/linux-x64-gnu": {},
    });
    const extra = optionalOnly(nm, ["@modelcontextprotocol/server", "ws", "zod"]).map((d) => d.slice(nm.length + 1));
    expect(extra.sort()).toEqual(["@node-datachannel/linux-x64-gnu", "detect-libc", "node-datachannel"]);
  });

  it("leaves a package that both a required and an optional dependency need with the required ones", () => {
    const nm = tree({ hono: { deps: ["shared"] }, shared: {}, "node-datachannel": { deps: ["shared"] } });
    expect(optionalOnly(nm, ["hono"]).map((d) => d.slice(nm.length + 1))).toEqual(["node-datachannel"]);
  });
});
