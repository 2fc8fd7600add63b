// Issue 32 (docs/protocol.md "The direct path's binding"): this machine's persistent DIRECT KEY, an ECDSA P-256
// key made once and kept as a private JWK in `<state dir>/direct-key.json` (mode 0600, the state dir 0700). It
// signs every direct-path answer (shared/client/direct-bind.ts); its public half goes into pairing links
// (`&dk=`), so a phone paired from this machine pins it. Two processes starting at once make ONE key: the file
// is created exclusively, and the loser reads the winner's.
import { z } from "../../shared/contract/zod.js";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateDirectKey, importDirectKey, type DirectKey } from "../../shared/client/direct-bind.js";
import { LineUpError } from "../../shared/client/errors.js";

export const DIRECT_KEY_FILE = "direct-key.json";

const Saved = z.object({
  v: z.literal(1),
  jwk: z.looseObject({ kty: z.literal("EC"), crv: z.literal("P-256"), x: z.string(), y: z.string(), d: z.string() }),
});

const cache = new Map<string, Promise<DirectKey>>();

/** This machine's direct key (made and saved on first use). Throws LineUpError `direct_key` on a file that is
 * there but is not a key (it is never overwritten: a new key would break every phone's pin). */
export function loadDirectKey(stateDir: string): Promise<DirectKey> {
  let p = cache.get(stateDir);
  if (!p) {
    p = load(stateDir);
    cache.set(stateDir, p);
    p.catch(() => cache.delete(stateDir));
  }
  return p;
}

async function load(stateDir: string): Promise<DirectKey> {
  const file = join(stateDir, DIRECT_KEY_FILE);
  const existing = read(file);
  if (existing) return existing;
  const made = await generateDirectKey();
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, JSON.stringify({ v: 1, jwk: made.jwk }) + "\n", { mode: 0o600, flag: "wx" });
    chmodSync(file, 0o600);
    return made.key;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    const theirs = read(file);
    if (!theirs) throw new LineUpError("direct_key", `${file} appeared while this process made one and is not readable yet; try again`);
    return theirs;
  }
}

function read(file: string): Promise<DirectKey> | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  let parsed: z.infer<typeof Saved>;
  try {
    parsed = Saved.parse(JSON.parse(text));
  } catch {
    throw new LineUpError(
      "direct_key",
      `${file} is not this machine's direct key; move it away to make a new one (phones paired before must then trust the new key)`,
    );
  }
  return importDirectKey(parsed.jwk);
}
