// shared/crypto is a leaf (issue 27 §7): one byte module (shared/crypto/bytes.ts) and the e2e and Web Push code
// import nothing of ours outside shared/crypto but the wire contract (the envelope's shape is shared/contract/envelope.ts) —
// the push endpoint's public-name rule is passed in by the callers.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../../shared/crypto");
const CONTRACT = resolve(import.meta.dirname, "../../shared/contract");

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

describe("shared/crypto imports", () => {
  it("imports only shared/crypto itself and the wire contract (no edge, session, inbox or client module)", () => {
    const outside: string[] = [];
    for (const f of files(ROOT)) {
      for (const m of readFileSync(f, "utf8").matchAll(/^(?:import|export)\b[^;]*?from\s+"(\.[^"]+)"/gm)) {
        const target = resolve(dirname(f), m[1]!);
        if (relative(ROOT, target).startsWith("..") && relative(CONTRACT, target).startsWith("..")) outside.push(`${relative(ROOT, f)} → ${m[1]}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it("has one byte module: no other bytes.ts under shared/crypto", () => {
    expect(
      files(ROOT)
        .filter((f) => f.endsWith("/bytes.ts"))
        .map((f) => relative(ROOT, f)),
    ).toEqual(["bytes.ts"]);
  });
});
