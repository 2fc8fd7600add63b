// A sealed session's side of the connection (docs/e2e.md; web/src/conn.ts owns one): the crypto, loaded with the
// lazy e2e chunk; frames from the relay opened one after another so their order stays (web/src/e2e/inbound.ts);
// frames of this device sealed in order, kept sealed when they cannot go out now, and sealed again after a
// `stale_epoch` refusal.
import type { RelayFrame } from "../../shared/contract/protocol.js";
import type { InboxLink, SessionCrypto } from "./e2e/index.js";
import type { Key } from "./i18n.js";
import type { Loose, OutFrame } from "./outbox.js";
import type { Provider } from "./provider.js";
import type { Thread } from "./thread.js";

/** Sealed frames sent whose plaintext is kept (memory only) for a re-seal after `stale_epoch`. */
const RECENT_OUT = 50;

export interface SealedHost {
  readonly sid: string;
  readonly clientId: string;
  readonly inbox: InboxLink | undefined;
  readonly thread: Thread;
  readonly calls: Provider;
  /** The current connection's number: what was sealed for an older one is kept, not sent. */
  link(): number;
  /** Puts a sealed frame on the current connection; false when there is none past `hello`. */
  write(f: Loose): boolean;
  /** Keeps a sealed frame for the next `hello`. */
  keep(f: Loose): void;
  /** Sends a plaintext frame again (it is sealed anew). */
  resend(f: OutFrame): void;
  noKey(missing: boolean): void;
  notice(key: Key): void;
  /** The relay said hello without `sealed` to a session pinned sealed (issue 26). */
  downgrade(): void;
  /** The opened hello: the session is sealed. */
  sealedHello(): void;
  frame(f: RelayFrame): void;
}

export class SealedLink {
  private crypto: Promise<SessionCrypto> | undefined;
  private inChain: Promise<void> = Promise.resolve();
  private outChain: Promise<void> = Promise.resolve();
  private readonly recentOut = new Map<string, OutFrame>();

  constructor(private readonly host: SealedHost) {}

  /** New keys for the inbox: the crypto reloads the keyring on its next use. */
  reset(): void {
    this.crypto = undefined;
  }

  load(): Promise<SessionCrypto> {
    const p = (this.crypto ??= import("./e2e/index.js").then(async (m) => {
      const c = await m.sessionCrypto(this.host.inbox, this.host.sid, this.host.clientId);
      this.host.noKey(!c.hasKey);
      return c;
    }));
    // A chunk that failed to load (offline before the service worker cached it) is tried again next time.
    p.catch(() => this.crypto === p && (this.crypto = undefined));
    return p;
  }

  /** A frame from the relay, handled after the ones before it; dropped if its connection (`link`) ended meanwhile. */
  in(f: Loose, link?: number): void {
    this.inChain = this.inChain.then(() => (link === undefined || this.host.link() === link ? this.open(f) : undefined)).catch(() => undefined);
  }

  /** Seals then sends, in order; what cannot be sent now is kept sealed in the outbox. */
  out(f: OutFrame): void {
    const link = this.host.link();
    const id = "call_id" in f ? f.call_id : "id" in f ? f.id : "";
    if (id && f.type !== "tool.ack") {
      this.recentOut.set(`${f.type}/${id}`, f);
      if (this.recentOut.size > RECENT_OUT) this.recentOut.delete(this.recentOut.keys().next().value!);
    }
    this.outChain = this.outChain
      .then(async () => {
        const out = await (await this.load()).seal(f);
        if (this.host.link() !== link || !this.host.write(out)) this.host.keep(out);
      })
      .catch(() => {
        this.host.noKey(true);
        // Only what a person sent is worth a notice; the registration just waits for a key.
        if (f.type === "tool.result" || f.type === "message") this.host.notice("e2eCannotSeal");
      });
  }

  /** Keeps a frame for the next `hello`, sealed (never in plaintext). */
  keep(f: OutFrame | Loose): void {
    void this.load()
      .then((c) => c.seal(f))
      .then(
        (s) => this.host.keep(s),
        () => this.host.notice("e2eCannotSeal"),
      );
  }

  private async open(sent: Loose): Promise<void> {
    const h = this.host;
    if (sent.type === "hello" && sent.sealed === undefined) {
      // Pinned sealed, and the relay says plaintext: refused before anything is sent (issue 26).
      h.downgrade();
      return;
    }
    const c = await this.load();
    await (await import("./e2e/index.js")).deliverInbound(h, c, sent, this.recentOut);
  }
}
