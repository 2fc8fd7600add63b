// One inbox this device is paired with (docs/inbox.md): its socket `GET /api/inbox/ws` (the device
// credential as a subprotocol) sends the whole InboxState at once and after every change — devices,
// agent machines, sessions with their online state and waiting calls. A close with 4401, or a 401 from any
// inbox endpoint, means this device was removed: the caller forgets the inbox.
import { SUBPROTOCOL, TOKEN_SUBPROTOCOL_PREFIX } from "../../shared/contract/limits.js";
import { signal } from "@preact/signals";
import type { CodeIssued, DeviceInfo, DevicePaired, InboxSessionFrame, InboxState } from "../../shared/contract/inbox.js";
import { applySessionFrame } from "../../shared/inbox/apply.js";
import { ReconnectingSocket, type RawFrame } from "../../shared/client/socket.js";
import { CLOSE } from "../../shared/contract/close.js";
import { readJson, remove, writeJson, type SavedInbox } from "./storage.js";
import { LineUpError } from "../../shared/client/errors.js";

/** Heartbeat: a `ping` this often; no frame at all for DEAD_MS means the socket is dead (both relays answer `pong`). */
const PING_MS = 20_000;
const DEAD_MS = 45_000;

/** A JSON request to the relay; errors become LineUpError with the relay's `{error:{code,message}}`. */
export async function api<T>(origin: string, method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(new URL(path, origin), { method, headers, cache: "no-store", ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  if (!r.ok) {
    const e = (await r.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
    throw new LineUpError(e?.error?.code ?? `http_${r.status}`, e?.error?.message ?? `HTTP ${r.status}`, r.status);
  }
  return (r.status === 204 ? undefined : await r.json()) as T;
}

/** Redeems a pairing code (the `#pair=` fragment) on the relay that served this page. */
export function redeemPairing(origin: string, code: string, name: string): Promise<DevicePaired> {
  return api<DevicePaired>(origin, "POST", "/api/pair", undefined, { code, name });
}

function isSessionFrame(v: RawFrame): v is RawFrame & InboxSessionFrame {
  const f = v as Partial<InboxSessionFrame>;
  return f.type === "inbox.session" && typeof f.session_id === "string" && (f.session === undefined || (typeof f.session === "object" && f.session !== null));
}

function isState(v: unknown): v is InboxState {
  const s = v as Partial<InboxState> | null;
  return !!s && s.type === "inbox" && Array.isArray(s.sessions) && Array.isArray(s.devices) && Array.isArray(s.machines);
}

export type InboxPhase = "connecting" | "online" | "offline" | "stopped";

export interface InboxHooks {
  onState: (s: InboxState) => void;
  onRevoked: () => void;
}

export class InboxConn {
  /** The last state (kept on the device, so the home screen shows the sessions offline too). */
  readonly state = signal<InboxState | null>(null);
  readonly phase = signal<InboxPhase>("connecting");

  /** The one reconnecting socket of the clients (shared/client/socket.ts): backoff, heartbeat, terminal closes. */
  private sock: ReconnectingSocket | undefined;
  /** The current connection brought a state: only a connection that did not says nothing about the credential. */
  private got = false;
  private stopped = false;
  private revokedOnce = false;
  /** issue 16: what this device shows (web/src/push.ts), the one frame the inbox socket takes; resent on every open. */
  private view: string | null = null;

  constructor(
    readonly saved: SavedInbox,
    private readonly hooks: InboxHooks,
  ) {
    const cached = readJson<unknown>(this.cacheKey, null);
    if (isState(cached)) this.state.value = cached;
  }

  private get cacheKey(): string {
    return `inboxstate.${this.saved.inbox_id}`;
  }

  start(): void {
    this.stopped = false;
    const u = new URL("/api/inbox/ws", this.saved.origin);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    // The credential travels as a subprotocol, never in the URL (docs/inbox.md). The inbox protocol has no
    // hello: a connection counts as up once open; the socket sees no hello timeout.
    const sock = new ReconnectingSocket({
      // The global WebSocket is looked up at each dial (a test's routeWebSocket replaces it in the page).
      dial: () => new WebSocket(u.toString(), [SUBPROTOCOL, `${TOKEN_SUBPROTOCOL_PREFIX}${this.saved.device_credential}`]),
      heartbeatMs: PING_MS,
      deadMs: DEAD_MS,
      helloTimeoutMs: 0,
      helloOnOpen: true,
    });
    this.sock = sock;
    this.got = false;
    this.phase.value = "connecting";
    sock.on("open", () => {
      if (this.view) sock.send(this.view); // issue 16: push suppression needs it from the start
    });
    sock.on("frame", (f) => this.sock === sock && this.onFrame(f));
    sock.on("close", () => {
      if (this.sock !== sock) return;
      this.phase.value = "offline";
      // A refused upgrade looks like any network failure (1006): ask over HTTP whether we were removed.
      if (!this.got) void this.refresh();
      this.got = false;
    });
    sock.on("terminal", (t) => {
      if (this.sock !== sock) return;
      if (t.code === CLOSE.revoked) this.revoked();
      else this.stop();
    });
    sock.start();
  }

  stop(): void {
    this.stopped = true;
    const sock = this.sock;
    this.sock = undefined;
    void sock?.stop();
    this.phase.value = "stopped";
  }

  /** Stops and drops what this device kept about the inbox. */
  forget(): void {
    this.stop();
    remove(this.cacheKey);
  }

  /** Connects now if a retry is waiting (the network came back, the page became visible). */
  poke(): void {
    this.sock?.poke();
  }

  /** Treats the socket as dead (the browser went offline): retried with backoff. */
  drop(): void {
    this.sock?.drop();
  }

  private onFrame(f: RawFrame): void {
    // The relay says so just before it closes with 4401 (the close may arrive late).
    if (f.type === "revoked") {
      this.revoked();
      return;
    }
    if (isSessionFrame(f)) {
      // Only on top of this connection's whole state (its first frame); never the cached state of another one.
      const st = this.state.value;
      if (this.got && st && f.inbox_id === st.inbox_id) this.setState(applySessionFrame(st, f));
      return;
    }
    if (!isState(f)) return;
    this.got = true;
    this.phase.value = "online";
    this.setState(f);
  }

  private setState(s: InboxState): void {
    this.state.value = s;
    writeJson(this.cacheKey, s);
    this.hooks.onState(s);
  }

  private revoked(): void {
    if (this.revokedOnce) return;
    this.revokedOnce = true;
    this.stop();
    this.hooks.onRevoked();
  }

  /** GET /api/inbox: the state over HTTP (when the socket cannot open); 401 means this device was removed. */
  async refresh(): Promise<void> {
    try {
      const s = await this.request<unknown>("GET", "/api/inbox");
      if (isState(s) && !this.stopped) this.setState(s);
    } catch {
      /* offline or refused: the socket's retry handles it */
    }
  }

  /** A request with the device credential. A 401 is final: the device was removed from the inbox. */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    try {
      return await api<T>(this.saved.origin, method, path, this.saved.device_credential, body);
    } catch (e) {
      if (e instanceof LineUpError && e.status === 401) this.revoked();
      throw e;
    }
  }

  rename(id: string, name: string): Promise<DeviceInfo> {
    return this.request<DeviceInfo>("PATCH", `/api/inbox/devices/${encodeURIComponent(id)}`, { name });
  }

  revokeDevice(id: string): Promise<void> {
    return this.request<void>("DELETE", `/api/inbox/devices/${encodeURIComponent(id)}`);
  }

  revokeMachine(id: string): Promise<void> {
    return this.request<void>("DELETE", `/api/inbox/machines/${encodeURIComponent(id)}`);
  }

  createPairing(): Promise<CodeIssued> {
    return this.request<CodeIssued>("POST", "/api/inbox/pairings");
  }

  createJoinCode(): Promise<CodeIssued> {
    return this.request<CodeIssued>("POST", "/api/inbox/join-codes");
  }

  /** issue 16: tells the inbox what this device shows now (docs/push.md: no push while it shows that call). */
  setView(frame: string): void {
    this.view = frame;
    this.sock?.send(frame);
  }

  /** Checks the credential after a session refused it: only the inbox says whether it was revoked. */
  verify(): void {
    void this.refresh();
  }
}
