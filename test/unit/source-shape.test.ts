// The source tree's shape as issue 27 set it (docs/development.md "Source limits"): no source file over 500 lines,
// the two client shells (adapter/client/agent.ts, web/src/conn.ts) at most 400 and the session object at most 180,
// no file/folder twins, no `as unknown as` cast, and no close-code number outside the one CLOSE table. Tests, fixtures and vendored files
// are not source.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const SOURCE_DIRS = ["adapter", "shared", "worker", "web", "bench", "scripts", "packages/agent"];
const SKIP = new Set(["node_modules", "dist", "test", "fixtures", ".tmp", ".wrangler"]);

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? SKIP.has(e.name)
        ? []
        : files(join(dir, e.name))
      : /\.(ts|tsx|mjs|cjs|js)$/.test(e.name) && !e.name.endsWith(".d.ts")
        ? [join(dir, e.name)]
        : [],
  );
}

const source = SOURCE_DIRS.flatMap((d) => files(join(ROOT, d))).map((f) => ({ path: relative(ROOT, f), text: readFileSync(f, "utf8") }));
const lines = (text: string) => text.split("\n").length - (text.endsWith("\n") ? 1 : 0);

describe("the source tree's shape", () => {
  it("finds the source it checks", () => {
    expect(source.map((f) => f.path)).toEqual(
      expect.arrayContaining(["adapter/client/agent.ts", "web/src/conn.ts", "worker/session.ts", "shared/contract/close.ts"]),
    );
  });

  it("has no source file over 500 lines", () => {
    expect(source.filter((f) => lines(f.text) > 500).map((f) => `${f.path}: ${lines(f.text)}`)).toEqual([]);
  });

  it("keeps the clients' thin shells at most 400 lines and the session object at most 180", () => {
    const over = (path: string, max: number) => {
      const f = source.find((s) => s.path === path);
      return f && lines(f.text) > max ? [`${path}: ${lines(f.text)} > ${max}`] : [];
    };
    expect([...over("adapter/client/agent.ts", 400), ...over("web/src/conn.ts", 400), ...over("worker/session.ts", 180)]).toEqual([]);
  });

  it("has no file/folder twins (`x.ts` beside `x/`) in shared/, adapter/, worker/ or web/", () => {
    const twins = source
      .filter((f) => /^(shared|adapter|worker|web)\//.test(f.path))
      .map((f) => f.path.replace(/\.(ts|tsx|mjs|cjs|js)$/, ""))
      .filter((stem) => existsSync(join(ROOT, stem)) && statSync(join(ROOT, stem)).isDirectory());
    expect(twins).toEqual([]);
  });

  it("has no `as unknown as` cast in source", () => {
    expect(source.filter((f) => /\bas unknown as\b/.test(f.text)).map((f) => f.path)).toEqual([]);
  });

  it("names close codes only in the CLOSE table (shared/contract/close.ts)", () => {
    // A close or stop called with, or a `code` compared to, a number of RFC 6455 §7.4.1 or our 4xxx range (comments aside).
    const literal = /(\.(close|stop)\(\s*|closeQuietly\([^,]+,\s*|\bcode\s*(===|!==|==|!=|>=|<=|<|>)\s*)(100\d|101[0-5]|[34]\d{3})\b/;
    const hits = source
      // The bare Durable Object of the benchmarks is a baseline that shares no code with the relay on purpose.
      .filter((f) => f.path !== "shared/contract/close.ts" && !f.path.startsWith("bench/baseline-"))
      .flatMap((f) =>
        f.text
          .split("\n")
          .map((l, i) => ({ l: l.replace(/\/\/.*$|^\s*\*.*$|\/\*.*?\*\//g, ""), i }))
          .filter(({ l }) => literal.test(l))
          .map(({ l, i }) => `${f.path}:${i + 1}: ${l.trim()}`),
      );
    expect(hits).toEqual([]);
  });
});
