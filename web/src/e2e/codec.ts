// A sealed session's codec on this device (docs/e2e.md): the clients' one plain/sealed codec
// (shared/client/codec.ts: screened, opened and sealed in order, a pinned session's plaintext hello refused)
// over this device's keyring of the inbox (web/src/e2e/keyring.ts). In the lazy `e2e` chunk, with the codec's
// zod schemas and crypto: a plaintext session never loads it (web/src/conn.ts passes its frames as they are).
import { Codec, type CodecOptions } from "../../../shared/client/codec.js";
import { sealFrame, type Frame } from "../../../shared/crypto/e2e/index.js";
import { keyringFor, type InboxLink, type Keyring } from "./keyring.js";
import { checkCall } from "./session.js";
import { LineUpError } from "../../../shared/client/errors.js";

export interface SealedCodec {
  readonly codec: Codec;
  /** This device holds a content key of the inbox. */
  hasKey(): boolean;
  /** New keys for the inbox: the keyring is read again. */
  reset(): Promise<void>;
  /** Seals frames for the outbox at rest (never plaintext in localStorage); throws without a key. */
  sealAll(frames: readonly object[]): Promise<Frame[]>;
  /** Null when a call's opened arguments fit the app's tool schema, else why not (docs/e2e.md rule 2). */
  check(name: string, action: string | undefined, args: unknown): string | null;
}

export async function sealedCodec(
  inbox: InboxLink | undefined,
  o: Pick<CodecOptions, "sessionId" | "sender" | "pinned" | "write" | "deliver" | "log">,
): Promise<SealedCodec> {
  const load = (): Promise<Keyring | undefined> => (inbox ? keyringFor(inbox).catch(() => undefined) : Promise.resolve(undefined));
  let kr = await load();
  const codec = new Codec({
    ...o,
    keys: {
      keyOf: (epoch) => kr?.keyOf(epoch),
      current: () => kr?.current(),
      // An epoch newer than ours (a re-key), or a `stale_epoch`: fetch our wrap; never throws.
      refresh: async () => {
        kr ??= await load();
        await kr?.refresh().catch(() => undefined);
      },
    },
  });
  return {
    codec,
    hasKey: () => !!kr?.current(),
    reset: async () => {
      kr = await load();
    },
    sealAll: async (frames) => {
      const ck = kr?.current();
      if (!ck) throw new LineUpError("e2e_no_key", "this device holds no key of the inbox");
      const ctx = { session_id: o.sessionId, sender: o.sender() };
      const out: Frame[] = [];
      for (const f of frames) out.push(await sealFrame(ck, ctx, { ...f }));
      return out;
    },
    check: (name, action, args) => checkCall(name, action, args),
  };
}
