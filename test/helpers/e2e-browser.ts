// Shared by the sealed-session browser tests (browser-e2e-sealed, browser-e2e-push): the agent machine
// played by the test — it turns E2E on for a fresh inbox, sponsors the page's pairing (answers its hello
// with makePairReply), and drives a sealed session over a raw socket with shared/crypto/e2e/frames.ts.
import type { Page } from "playwright-core";
import { expect } from "vitest";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import * as E2E from "../../shared/crypto/e2e/index.js";
import type { CodeIssued, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { Agent, type Frame } from "./browser.js";

export async function api<T>(relay: string, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(`${relay}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { status: r.status, body: parsed as T };
}

export async function ok<T>(relay: string, method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const r = await api<T>(relay, method, path, token, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

interface KeyState {
  epoch: number;
  rekey_needed: boolean;
  holders: string[];
  wrap: E2E.WrappedKey | null;
  roster: E2E.Envelope | null;
  hellos: unknown[];
  replies: unknown[];
}

/** The agent machine of an inbox with E2E on: its key pair, the content keys it holds, whom it trusts. */
export class Machine {
  readonly keys = new Map<number, E2E.ContentKey>();
  readonly trusted: Record<string, string> = {};
  private constructor(
    readonly relay: string,
    readonly m: MachineCreated,
    readonly self: E2E.HolderSelf,
  ) {}

  static async create(relay: string, opts: { on?: boolean } = {}): Promise<Machine> {
    const m = await ok<MachineCreated>(relay, "POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" });
    const self = await E2E.holderSelf(m.machine_id, await E2E.generateHolderKeyPair({ extractable: true }));
    const mc = new Machine(relay, m, self);
    mc.trusted[self.id] = self.publicKey;
    if (opts.on !== false) await mc.turnOn();
    return mc;
  }

  /** `lineup e2e on`: epoch 1, wrapped for the machine itself, with a roster of one. */
  async turnOn(): Promise<void> {
    const key = await E2E.generateContentKey(1);
    this.keys.set(1, key);
    const wrap = await E2E.wrapContentKey({ inboxId: this.inbox, sender: this.self, recipient: this.self, key });
    const roster = await E2E.sealRoster(key, this.inbox, this.self.id, [this.self]);
    await ok(this.relay, "PUT", "/api/inbox/e2e", this.cred, { base_epoch: 0, epoch: 1, wraps: { [this.self.id]: wrap }, roster });
  }

  /** A v1 pairing link (no secret): what a device paired before E2E was turned on opened. */
  async plainLink(): Promise<string> {
    return (await ok<CodeIssued>(this.relay, "POST", "/api/inbox/pairings", this.cred)).url!;
  }

  get inbox(): string {
    return this.m.inbox_id;
  }
  get cred(): string {
    return this.m.machine_credential;
  }
  current(): E2E.ContentKey {
    return this.keys.get(Math.max(...this.keys.keys()))!;
  }
  keyOf = (e: number): E2E.ContentKey | undefined => this.keys.get(e);

  state(): Promise<KeyState> {
    return ok<KeyState>(this.relay, "GET", "/api/inbox/e2e", this.cred);
  }

  /** A pairing link with the secret in its fragment, as `lineup pair` prints it with E2E on. */
  async pairingLink(): Promise<{ url: string; code: string; secret: string }> {
    const c = await ok<CodeIssued>(this.relay, "POST", "/api/inbox/pairings", this.cred);
    const secret = E2E.newPairingSecret();
    return { url: `${c.url!}&k=${secret}`, code: c.code, secret };
  }

  /** Waits for the page's hello of `code` and answers it (makePairReply + the roster). Returns the comparison code. */
  async sponsor(code: string, secret: string, timeoutMs = 20_000): Promise<{ comparisonCode: string; joiner: E2E.HolderPublic }> {
    const codeId = await E2E.pairingCodeId(code);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const st = await this.state();
      const hello = st.hellos.find((h) => (h as { code_id?: string }).code_id === codeId);
      if (hello) {
        const { reply, comparisonCode, joiner } = await E2E.makePairReply({
          secret,
          inboxId: this.inbox,
          codeId,
          hello,
          sponsor: this.self,
          key: this.current(),
        });
        this.trusted[joiner.id] = joiner.publicKey;
        const holders = Object.entries(this.trusted).map(([id, publicKey]) => ({ id, publicKey }));
        const roster = await E2E.sealRoster(this.current(), this.inbox, this.self.id, holders);
        await ok(this.relay, "POST", "/api/inbox/e2e/reply", this.cred, { reply, roster });
        return { comparisonCode, joiner };
      }
      if (Date.now() > deadline) throw new Error(`no hello for ${codeId} within ${timeoutMs} ms: ${JSON.stringify(st).slice(0, 400)}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  /** After someone else re-keyed: this machine's wrap of the new epoch (from a holder it trusts). */
  async follow(epoch: number, timeoutMs = 20_000): Promise<E2E.ContentKey> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const st = await this.state();
      if (st.epoch >= epoch && st.wrap && st.wrap.e >= epoch) {
        const ck = await E2E.unwrapContentKey({ inboxId: this.inbox, recipient: this.self, wrapped: st.wrap, trusted: this.trusted });
        this.keys.set(ck.epoch, ck);
        return ck;
      }
      if (Date.now() > deadline) throw new Error(`no wrap of epoch ${epoch}: ${JSON.stringify(st).slice(0, 400)}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  sealedSession(project_dir: string): Promise<SessionCreated & { inbox_id: string }> {
    return ok(this.relay, "POST", "/api/inbox/sessions", this.cred, { project_dir, host: "laptop", sealed: true });
  }
}

/** The agent of a sealed session: every frame it sends sealed, every frame it receives opened. */
export class SealedAgent {
  private constructor(
    readonly a: Agent,
    readonly mc: Machine,
    readonly sid: string,
    readonly sender: string,
  ) {}

  static async connect(mc: Machine, s: SessionCreated, clientId = "agent-1"): Promise<SealedAgent> {
    const a = await Agent.connect(s, clientId);
    return new SealedAgent(a, mc, s.session_id, `agent:${clientId}`);
  }

  private ctx(): E2E.SealContext {
    return { session_id: this.sid, sender: this.sender };
  }

  /** A sealed call with its preview; what went over the wire is returned (the test may tamper with it). */
  async sealCall(call_id: string, name: string, args: Record<string, unknown>, action?: string, preview?: E2E.Preview): Promise<Frame> {
    const f = await E2E.sealFrame(this.mc.current(), this.ctx(), {
      type: "tool.call",
      call_id,
      name,
      arguments: args,
      timeout_s: 300,
      ...(action ? { action } : {}),
    });
    const p = preview ?? { text: String(args.question ?? args.summary ?? name) };
    f.preview = await E2E.sealPreview(this.mc.current(), this.ctx(), call_id, p);
    return f as Frame;
  }

  async call(call_id: string, name: string, args: Record<string, unknown>, action?: string, preview?: E2E.Preview): Promise<Frame> {
    const f = await this.sealCall(call_id, name, args, action, preview);
    this.a.send(f);
    return f;
  }

  send(f: Record<string, unknown>): void {
    this.a.send(f);
  }

  async message(id: string, text: string): Promise<void> {
    this.a.send(await E2E.sealFrame(this.mc.current(), this.ctx(), { type: "message", id, content: [{ type: "text", text }] }));
  }

  /** The result of `call_id`, opened; the raw frame too, to check nothing plaintext travelled. */
  async result(callId: string, timeoutMs = 20_000): Promise<{ raw: Frame; open: E2E.Frame }> {
    const raw = await this.a.result(callId, timeoutMs);
    expect(raw.result).toBeUndefined();
    expect(raw.error).toBeUndefined();
    return { raw, open: await E2E.openFrame(this.mc.keyOf, this.sid, raw) };
  }

  async nextMessage(timeoutMs = 20_000): Promise<{ raw: Frame; open: E2E.Frame }> {
    const raw = await this.a.next(
      (f) => f.type === "message" && (f.from as { role?: string } | undefined)?.role === "app",
      timeoutMs,
      "a message from the app",
    );
    expect(raw.content).toBeUndefined();
    return { raw, open: await E2E.openFrame(this.mc.keyOf, this.sid, raw) };
  }

  /** The app's sealed tool.list, opened (its built-in tools with their schemas). */
  async appTools(timeoutMs = 20_000): Promise<E2E.Frame> {
    const raw = await this.a.appTools(timeoutMs);
    for (const t of raw.tools as Record<string, unknown>[]) expect(t.inputSchema).toBeUndefined();
    return E2E.openFrame(this.mc.keyOf, this.sid, raw);
  }

  close(): void {
    this.a.close();
  }
}

/** Opens a `#pair=…&k=…` link in `page`, answers its hello, and waits for the comparison code on screen. */
export async function pairSealed(page: Page, mc: Machine): Promise<{ device_id: string; comparisonCode: string; urlAfter: string }> {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  const link = await mc.pairingLink();
  await page.goto(link.url);
  // The fragment (code and secret) leaves the address bar at once.
  const urlAfter = page.url();
  const { comparisonCode, joiner } = await mc.sponsor(link.code, link.secret);
  try {
    await page.locator(".notice", { hasText: comparisonCode }).waitFor({ timeout: 20_000 });
  } catch (e) {
    throw new Error(`the page did not show the comparison code ${comparisonCode}: ${await page.locator("body").innerText()}\n${problems.join("\n")}`, {
      cause: e,
    });
  }
  return { device_id: joiner.id, comparisonCode, urlAfter };
}
