// A sealed session's frames from the relay, opened into the plaintext the connection (web/src/conn.ts) handles
// like a plain session's (docs/e2e.md). Screened first (shared/crypto/e2e/guard.ts, issue 26): plaintext content
// is dropped and the relay's own errors only end calls. In the lazy `e2e` chunk: plaintext sessions never load it.
import type { MessageOut, RelayFrame, ToolCallOut, ToolDef } from "../../../shared/contract/protocol.js";
import type { Frame } from "../../../shared/crypto/e2e/index.js";
import { isRelayFrame } from "../relay-frame.js";
import type { OutFrame } from "../outbox.js";
import type { Provider } from "../provider.js";
import type { SealedHost } from "../sealed-link.js";
import type { SessionCrypto } from "./session.js";

/** What one sealed frame means to the connection, in plaintext. */
export type Inbound =
  | { kind: "drop"; why: string }
  /** Handled exactly as a plain session's frame (hello, presence, opened tool.list and tool.cancel, relay errors). */
  | { kind: "frame"; frame: RelayFrame }
  /** The relay refused an envelope of an old epoch (the keys were refreshed): seal it again. */
  | { kind: "stale"; callId: string | undefined }
  /** A call: opened and valid; or `unreadable` (it did not open here); or `invalid` (its arguments miss the schema). */
  | { kind: "call"; call: ToolCallOut; resealed: boolean; unreadable?: true; invalid?: string }
  /** A message: opened; or `unreadable`; or the history budget's placeholder (`elided`). */
  | { kind: "message"; message: MessageOut; unreadable?: true; elided?: true };

const obj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === "string";

const asFrame = (f: Frame): Inbound => (isRelayFrame(f) ? { kind: "frame", frame: f } : { kind: "drop", why: `a ${String(f.type)} frame without its fields` });

/**
 * Opens one frame of a sealed session. `seenMessage` skips a message already shown (no second opening);
 * `keyState` hears whether this device holds a key of the inbox whenever opening learned it.
 */
export async function openInbound(c: SessionCrypto, sent: Frame, seenMessage: (id: string) => boolean, keyState: (hasKey: boolean) => void): Promise<Inbound> {
  const screened = c.screen(sent);
  if ("drop" in screened) return { kind: "drop", why: screened.drop };
  const f = screened.frame;
  switch (f.type) {
    case "hello":
      keyState(c.hasKey);
      return asFrame(f);
    case "tool.call":
      return openCall(c, f, keyState);
    case "tool.list": {
      let tools: ToolDef[] = [];
      try {
        const opened = (await c.open(f)).tools;
        if (Array.isArray(opened)) tools = opened;
      } catch {
        /* the agent's tools stay unknown here; the catch-up count goes on */
      }
      return { kind: "frame", frame: { type: "tool.list", tools } };
    }
    case "tool.cancel": {
      let opened: Frame = { ...f };
      try {
        opened = await c.open(f);
      } catch {
        delete opened.sealed;
      }
      return asFrame(opened);
    }
    case "message":
      return openMessage(c, f, seenMessage);
    case "error":
      if (f.code === "stale_epoch") {
        await c.refresh();
        keyState(c.hasKey);
        return { kind: "stale", callId: str(f.call_id) ? f.call_id : undefined };
      }
      return asFrame(f);
    default:
      // tool.result (acknowledged unread: this app makes no calls), presence and the rest.
      return asFrame(f);
  }
}

async function openCall(c: SessionCrypto, f: Frame, keyState: (hasKey: boolean) => void): Promise<Inbound> {
  const call: ToolCallOut = {
    type: "tool.call",
    call_id: String(f.call_id ?? ""),
    name: String(f.name ?? ""),
    arguments: {},
    deadline: Number(f.deadline ?? Date.now()),
    from: "agent",
  };
  if (str(f.action)) call.action = f.action;
  const resealed = f.resealed === true;
  let args: unknown;
  try {
    args = (await c.open(f)).arguments ?? {};
  } catch {
    // Never the ciphertext: the card says it cannot be opened here.
    keyState(c.hasKey);
    return { kind: "call", call, resealed, unreadable: true };
  }
  // Validation moved to the receiver (docs/e2e.md rule 2): refused before anything is rendered.
  const bad = c.check(call.name, call.action, args);
  if (bad || !obj(args)) return { kind: "call", call, resealed, invalid: bad ?? "(arguments): must be an object" };
  return { kind: "call", call: { ...call, arguments: args }, resealed };
}

async function openMessage(c: SessionCrypto, f: Frame, seen: (id: string) => boolean): Promise<Inbound> {
  if (!str(f.id) || seen(f.id)) return { kind: "drop", why: "a message without an id, or one already shown" };
  const by = f.from;
  if (!obj(by) || !str(by.client_id) || (by.role !== "agent" && by.role !== "app")) return { kind: "drop", why: "a message without its sender" };
  const from: MessageOut["from"] = { role: by.role, client_id: by.client_id };
  const base: MessageOut = { type: "message", id: f.id, from, ts: typeof f.ts === "number" ? f.ts : Date.now(), content: [] };
  if (f.sealed === undefined && !Array.isArray(f.content)) {
    // The history budget's placeholder of an old sealed message: nothing to open, nothing lost here.
    return f.elided === true ? { kind: "message", message: base, elided: true } : { kind: "message", message: base, unreadable: true };
  }
  try {
    const m = await c.open(f);
    return { kind: "message", message: { ...base, content: Array.isArray(m.content) ? m.content : [] } };
  } catch {
    return { kind: "message", message: base, unreadable: true };
  }
}

/** Opens a sealed frame and hands its plaintext to the connection (web/src/sealed-link.ts); `recent` holds the
 * plaintext of frames this device sealed lately, sealed again after a `stale_epoch`. */
export async function deliverInbound(h: SealedHost, c: SessionCrypto, sent: Frame, recent: Map<string, OutFrame>): Promise<void> {
  const d = await openInbound(
    c,
    sent,
    (id) => h.thread.has(id),
    (has) => h.noKey(!has),
  );
  switch (d.kind) {
    case "frame":
      if (d.frame.type === "hello") h.sealedHello();
      return h.frame(d.frame);
    case "stale": {
      // The relay refused an envelope of an old epoch: seal it again under the new key.
      const list = [...recent.entries()];
      const hit = d.callId ? list.filter(([k]) => k.endsWith(`/${d.callId}`)) : list.slice(-1);
      for (const [, f] of hit) h.resend(f);
      return;
    }
    case "message":
      h.thread.add(d.message, false, d.unreadable === true);
      if (d.elided) h.thread.markElided(d.message.id);
      return;
    case "call":
      return sealedCall(h.calls, d.call, d.resealed, d.unreadable === true, d.invalid);
  }
}

/** A sealed call, opened or not: a card that cannot be opened here, an invalid one refused, a re-sealed one replacing its card. */
function sealedCall(p: Provider, call: ToolCallOut, resealed: boolean, unreadable: boolean, invalid: string | undefined): void {
  const { call_id: callId, name } = call;
  const known = p.find(callId);
  const action = call.action !== undefined ? { action: call.action } : {};
  if (unreadable) {
    // Never the ciphertext: the card says it cannot be opened here.
    if (known && !resealed) return;
    if (!known) {
      p.saw(callId);
      p.log.add({ call_id: callId, name, ...action, args: {}, deadline: call.deadline, at: Date.now(), state: "pending", unreadable: true });
    }
    return;
  }
  if (invalid !== undefined) {
    p.saw(callId);
    if (!known) p.send({ type: "tool.result", call_id: callId, name, ...action, error: { code: "invalid_arguments", message: invalid } });
    return;
  }
  if (known && (resealed || known.unreadable)) {
    // A re-sealed call replaces its card (never asked twice); a pending one keeps its state.
    p.saw(callId);
    p.log.update(callId, { args: call.arguments, unreadable: false, deadline: call.deadline });
    return;
  }
  p.call(call);
}
