// Regression tests for the layout move of issue 27 §7: files that find a sibling relative to their own
// module (`new URL("…", import.meta.url)`) were moved one folder deeper without that path, so `lineup mcp`
// said "not part of this build", `lineup serve` served no app, `lineup setup` wrote hooks that run a file
// that does not exist and the background policy refresh spawned one.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { defaultCommand } from "../../adapter/setup/index.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SOURCE_DIRS = ["adapter", "shared", "worker", "scripts", "bench"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : sourceFiles(p);
    return /\.(ts|tsx|mjs|js)$/.test(e.name) ? [p] : [];
  });
}

describe("paths a module resolves relative to itself", () => {
  it("regression (layout move): every new URL(…, import.meta.url) in the sources names a file of the package (dist/ once built)", () => {
    const broken: string[] = [];
    let seen = 0;
    for (const file of SOURCE_DIRS.flatMap((d) => sourceFiles(join(ROOT, d)))) {
      for (const m of readFileSync(file, "utf8").matchAll(/new URL\("([^"]+)", import\.meta\.url\)/g)) {
        seen++;
        const target = join(dirname(file), m[1] as string);
        const built = relative(ROOT, target).startsWith(`dist/`);
        if (!built && !existsSync(target)) broken.push(`${relative(ROOT, file)}: ${m[1]} → ${relative(ROOT, target)}`);
        if (built && relative(ROOT, target) !== "dist/web")
          broken.push(`${relative(ROOT, file)}: ${m[1]} → ${relative(ROOT, target)} (only dist/web is built)`);
      }
    }
    expect(seen).toBeGreaterThanOrEqual(4);
    expect(broken).toEqual([]);
  });

  it("regression (layout move): lineup setup's hook command runs this package's bin when lineup is not on PATH", () => {
    const [node, bin] = defaultCommand({ PATH: "" });
    expect(node).toBe(process.execPath);
    expect(bin).toBe(join(ROOT, "adapter", "bin", "lineup.mjs"));
    expect(existsSync(bin as string)).toBe(true);
  });
});
