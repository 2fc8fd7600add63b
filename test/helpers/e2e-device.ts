// A simulated paired device for the adapter's E2E tests, built from shared/e2e only (as the PWA is): it
// redeems a pairing link, sends its hello through the relay, accepts the sponsor's reply and opens / seals
// frames of sealed sessions over a raw socket. It knows nothing of the adapter.
import {
  acceptPairReply,
  generateHolderKeyPair,
  holderSelf,
  makePairHello,
  makePairReply,
  newPairingSecret,
  openFrame,
  openRoster,
  rekey,
  sealRoster,
  openPreview,
  pairingCodeId,
  parsePairingFragment,
  sealFrame,
  unwrapContentKey,
  type ContentKey,
  type Frame as E2EFrame,
  type HolderSelf,
  type Preview,
} from "../../shared/crypto/e2e/index.js";
import type { ToolDef } from "../../shared/contract/protocol.js";
import { connect, wsUrl, type Frame, type RawClient } from "./raw-client.js";

export interface Paired {
  inboxId: string;
  deviceId: string;
  credential: string;
  self: HolderSelf;
  codeId: string;
  secret: string;
  code: string;
}

async function api(base: string, method: string, path: string, credential: string | undefined, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(credential ? { authorization: `Bearer ${credential}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

export class SimDevice {
  keys = new Map<number, ContentKey>();
  trusted: Record<string, string> = {};
  constructor(
    readonly base: string,
    readonly p: Paired,
  ) {}

  /** Redeems the link's code and makes a non-extractable key, as the PWA does. No hello yet. */
  static async redeem(base: string, link: string, name = "sim phone"): Promise<SimDevice> {
    const frag = parsePairingFragment(new URL(link).hash);
    if (!frag?.secret) throw new Error(`the link carries no pairing secret: ${link}`);
    const r = await api(base, "POST", "/api/pair", undefined, { code: frag.code, name });
    if (r.status !== 201) throw new Error(`POST /api/pair: ${r.status} ${JSON.stringify(r.json)}`);
    const d = r.json as { inbox_id: string; device_id: string; device_credential: string };
    const self = await holderSelf(d.device_id, await generateHolderKeyPair({ extractable: false }));
    return new SimDevice(base, {
      inboxId: d.inbox_id,
      deviceId: d.device_id,
      credential: d.device_credential,
      self,
      codeId: await pairingCodeId(frag.code),
      secret: frag.secret,
      code: frag.code,
    });
  }

  /** Posts a hello (optionally a tampered one) and returns the relay's status. */
  async hello(tamper?: (h: Record<string, unknown>) => Promise<Record<string, unknown>>): Promise<number> {
    let h = (await makePairHello({
      secret: this.p.secret,
      inboxId: this.p.inboxId,
      codeId: this.p.codeId,
      joiner: { id: this.p.self.id, publicKey: this.p.self.publicKey },
    })) as unknown as Record<string, unknown>;
    if (tamper) h = await tamper(h);
    return (await api(this.base, "POST", "/api/inbox/e2e/hello", this.p.credential, h)).status;
  }

  async e2eState(): Promise<{ epoch: number; wrap: unknown; replies: unknown[]; holders: string[]; rekey_needed: boolean }> {
    const r = await api(this.base, "GET", "/api/inbox/e2e", this.p.credential);
    if (r.status !== 200) throw new Error(`GET /api/inbox/e2e: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json as { epoch: number; wrap: unknown; replies: unknown[]; holders: string[]; rekey_needed: boolean };
  }

  /** The sponsor's reply, if it came: accepted (MAC, wrap) and the key kept. */
  async takeReply(): Promise<ContentKey | undefined> {
    const st = await this.e2eState();
    const reply = st.replies.find((r) => (r as { code_id?: unknown }).code_id === this.p.codeId);
    if (!reply) return undefined;
    const got = await acceptPairReply({ secret: this.p.secret, inboxId: this.p.inboxId, codeId: this.p.codeId, joiner: this.p.self, reply });
    this.keys.set(got.key.epoch, got.key);
    this.trusted[got.sponsor.id] = got.sponsor.publicKey;
    return got.key;
  }

  /** A newer wrap for this device (after a re-key), unwrapped only from a trusted holder. */
  async takeWrap(): Promise<ContentKey | undefined> {
    const st = await this.e2eState();
    if (!st.wrap || this.keys.has(st.epoch)) return this.keys.get(st.epoch);
    const k = await unwrapContentKey({ inboxId: this.p.inboxId, recipient: this.p.self, wrapped: st.wrap, trusted: this.trusted });
    this.keys.set(k.epoch, k);
    return k;
  }

  /** The roster the relay keeps, opened (tries each holder as its sealer) into `trusted`. */
  async takeRoster(): Promise<void> {
    const r = await api(this.base, "GET", "/api/inbox/e2e", this.p.credential);
    const st = r.json as { epoch: number; roster: unknown; holders: string[] };
    const ck = this.keys.get(st.epoch);
    if (!ck || !st.roster) return;
    for (const id of [...st.holders, ...Object.keys(this.trusted)]) {
      try {
        for (const h of await openRoster(ck, this.p.inboxId, id, st.roster)) this.trusted[h.id] = h.publicKey;
        return;
      } catch {
        /* sealed by another holder */
      }
    }
  }

  /** A join code for a machine, with a fresh pairing secret (what the app's "Add a machine" shows). */
  async joinCode(): Promise<{ code: string; secret: string; codeId: string }> {
    const r = await api(this.base, "POST", "/api/inbox/join-codes", this.p.credential, {});
    if (r.status !== 201) throw new Error(`join code: ${r.status} ${JSON.stringify(r.json)}`);
    const code = (r.json as { code: string }).code;
    return { code, secret: newPairingSecret(), codeId: await pairingCodeId(code) };
  }

  /** As a sponsor: answers the hello of `codeId` (if it came) with the current key and the roster. */
  async sponsor(secret: string, codeId: string): Promise<boolean> {
    const r = await api(this.base, "GET", "/api/inbox/e2e", this.p.credential);
    const hello = (r.json as { hellos: { code_id?: string }[] }).hellos.find((h) => h.code_id === codeId);
    if (!hello) return false;
    const made = await makePairReply({ secret, inboxId: this.p.inboxId, codeId, hello, sponsor: this.p.self, key: this.current() });
    const roster = [
      ...Object.entries(this.trusted).map(([id, publicKey]) => ({ id, publicKey })),
      { id: this.p.self.id, publicKey: this.p.self.publicKey },
      made.joiner,
    ];
    const uniq = [...new Map(roster.map((h) => [h.id, h])).values()];
    const post = await api(this.base, "POST", "/api/inbox/e2e/reply", this.p.credential, {
      reply: made.reply,
      roster: await sealRoster(this.current(), this.p.inboxId, this.p.self.id, uniq),
    });
    if (post.status !== 201) throw new Error(`reply: ${post.status} ${JSON.stringify(post.json)}`);
    this.trusted[made.joiner.id] = made.joiner.publicKey;
    return true;
  }

  /** Re-keys the inbox itself (a device that revoked another, or any holder): wraps for `holders`. */
  async rekeyFor(holders: { id: string; publicKey: string }[]): Promise<ContentKey> {
    const cur = this.current();
    const all = [{ id: this.p.self.id, publicKey: this.p.self.publicKey }, ...holders.filter((h) => h.id !== this.p.self.id)];
    const next = await rekey({ inboxId: this.p.inboxId, current: cur, sender: this.p.self, holders: all });
    const wraps = Object.fromEntries(all.map((h, i) => [h.id, next.wraps[i]]));
    const r = await api(this.base, "PUT", "/api/inbox/e2e", this.p.credential, {
      base_epoch: cur.epoch,
      epoch: next.key.epoch,
      wraps,
      roster: await sealRoster(next.key, this.p.inboxId, this.p.self.id, all),
    });
    if (r.status !== 200) throw new Error(`PUT /api/inbox/e2e: ${r.status} ${JSON.stringify(r.json)}`);
    this.keys.set(next.key.epoch, next.key);
    return next.key;
  }

  readonly keyOf = (e: number): ContentKey | undefined => this.keys.get(e);

  current(): ContentKey {
    const k = [...this.keys.values()].sort((a, b) => b.epoch - a.epoch)[0];
    if (!k) throw new Error("the device holds no key");
    return k;
  }

  async sessions(): Promise<{ session_id: string; sealed?: boolean; waiting: Record<string, unknown>[] }[]> {
    const r = await api(this.base, "GET", "/api/inbox", this.p.credential);
    return (r.json as { sessions: { session_id: string; sealed?: boolean; waiting: Record<string, unknown>[] }[] }).sessions;
  }

  /** Connects to a session as this device; returns the socket and its AAD sender. */
  async join(sid: string, tools: ToolDef[] = []): Promise<{ ws: RawClient; sender: string; hello: Frame }> {
    const ws = await connect(wsUrl(this.base, sid), { token: this.p.credential, via: "subprotocol" });
    const hello = await ws.next("hello");
    const sender = `app:${String(hello.client_id)}`;
    if (tools.length) {
      ws.send(await sealFrame(this.current(), { session_id: sid, sender }, { type: "tool.list", tools: tools as unknown as E2EFrame[] }));
      await ws.sync();
    }
    return { ws, sender, hello };
  }

  open(sid: string, f: Frame): Promise<E2EFrame> {
    return openFrame(this.keyOf, sid, f as unknown as E2EFrame);
  }

  preview(sid: string, f: Frame): Promise<Preview> {
    return openPreview(this.keyOf, sid, String(f.call_id), String(f.sender), f.preview);
  }

  seal(sid: string, sender: string, f: E2EFrame): Promise<E2EFrame> {
    return sealFrame(this.current(), { session_id: sid, sender }, f);
  }
}
