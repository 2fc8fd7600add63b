// One inbox this device is paired with (docs/inbox.md): its socket `GET /api/inbox/ws` (the device
// credential as a subprotocol) sends the whole InboxState at once and after every change — devices,
// agent machines, sessions with their online state and waiting calls. A close with 4401, or a 401 from any
// inbox endpoint, means this device was removed: the caller forgets the inbox.
import { signal } from "@preact/signals";
import type { CodeIssued, DeviceInfo, DevicePaired, InboxState } from "../../shared/contract/inbox.js";
import { Backoff } from "../../shared/client/backoff.js";
import { CLOSE, isTerminalClose } from "../../shared/contract/close.js";
import { readJson, remove, writeJson, type SavedInbox } from "./storage.js";

const PING_MS = 20_000;
const DEAD_MS = 45_000;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A JSON request to the relay; errors become ApiError with the relay's `{error:{code,message}}`. */
export async function api<T>(origin: string, method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(new URL(path, origin), { method, headers, cache: "no-store", ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  if (!r.ok) {
    const e = (await r.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
    throw new ApiError(r.status, e?.error?.code ?? `http_${r.status}`, e?.error?.message ?? `HTTP ${r.status}`);
  }
  return (r.status === 204 ? undefined : await r.json()) as T;
}

/** Redeems a pairing code (the `#pair=` fragment) on the relay that served this page. */
export function redeemPairing(origin: string, code: string, name: string): Promise<DevicePaired> {
  return api<DevicePaired>(origin, "POST", "/api/pair", undefined, { code, name });
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

  private ws: WebSocket | null = null;
  private readonly backoff = new Backoff();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private openedAt = 0;
  private lastFrameAt = 0;
  /** Whether this socket ever answered `ping`: only then does its silence mean it is dead. */
  private pongs = false;
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
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.pingTimer);
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onclose = null;
      try {
        ws.close(CLOSE.normal);
      } catch {
        /* already closed */
      }
    }
    this.phase.value = "stopped";
  }

  /** Stops and drops what this device kept about the inbox. */
  forget(): void {
    this.stop();
    remove(this.cacheKey);
  }

  poke(): void {
    if (this.stopped || this.ws) return;
    clearTimeout(this.timer);
    this.connect();
  }

  drop(): void {
    const ws = this.ws;
    if (!ws) return;
    ws.onclose?.(new CloseEvent("close", { code: CLOSE.abnormal }));
    try {
      ws.close();
    } catch {
      /* ignore */
    }
  }

  private connect(): void {
    if (this.stopped) return;
    const u = new URL("/api/inbox/ws", this.saved.origin);
    u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
    let ws: WebSocket;
    let got = false;
    this.phase.value = this.backoff.attempts === 0 ? "connecting" : "offline";
    try {
      // The credential travels as a subprotocol, never in the URL (docs/inbox.md).
      ws = new WebSocket(u.toString(), ["lineup.v1", `lineup.token.${this.saved.device_credential}`]);
    } catch {
      this.schedule();
      return;
    }
    this.ws = ws;
    this.pongs = false;
    ws.onopen = () => {
      this.openedAt = Date.now();
      this.lastFrameAt = Date.now();
      this.startHeartbeat();
      if (this.view) ws.send(this.view); // issue 16: push suppression needs it from the start
    };
    ws.onmessage = (ev: MessageEvent) => {
      this.lastFrameAt = Date.now();
      if (typeof ev.data !== "string") return;
      if (ev.data === "pong") {
        this.pongs = true;
        return;
      }
      let f: unknown;
      try {
        f = JSON.parse(ev.data);
      } catch {
        return;
      }
      // The relay says so just before it closes with 4401 (the close may arrive late).
      if ((f as { type?: unknown } | null)?.type === "revoked") {
        this.revoked();
        return;
      }
      if (!isState(f)) return;
      got = true;
      this.phase.value = "online";
      this.setState(f);
    };
    ws.onclose = (ev: CloseEvent) => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearInterval(this.pingTimer);
      this.backoff.closed(got ? Date.now() - this.openedAt : 0);
      if (ev.code === CLOSE.revoked) {
        this.revoked();
        return;
      }
      if (isTerminalClose(ev.code)) {
        this.stop();
        return;
      }
      this.phase.value = "offline";
      // A refused upgrade looks like any network failure (1006): ask over HTTP whether we were removed.
      if (!got) void this.refresh();
      this.schedule();
    };
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), this.backoff.next());
  }

  private startHeartbeat(): void {
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => {
      const ws = this.ws;
      if (!ws) return;
      if (this.pongs && Date.now() - this.lastFrameAt > DEAD_MS) {
        this.drop();
        return;
      }
      if (ws.readyState === WebSocket.OPEN) ws.send("ping");
    }, PING_MS);
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
      if (e instanceof ApiError && e.status === 401) this.revoked();
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
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(frame);
  }

  /** Checks the credential after a session refused it: only the inbox says whether it was revoked. */
  verify(): void {
    void this.refresh();
  }
}
