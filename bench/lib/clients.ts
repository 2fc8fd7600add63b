// Raw `ws` clients speaking the lineup/1 contract (no adapter): an agent that makes calculator calls and
// times them, and apps that answer every call at once. The baselines carry the very same frames.
import WebSocket from "ws";
import { CALCULATOR, CONFIRM } from "../../shared/contract/builtin-tools.js";
import { CLOSE } from "../../shared/contract/close.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";

/** relay; the durable floor; the durable floor plus the relay's alarm writes; the bare object; Node. */
export type SystemName = "relay" | "durable" | "durable_alarm" | "do" | "node";

interface Pending {
  t0: number;
  resolve: (ms: number) => void;
  reject: (e: Error) => void;
}

const now = () => performance.now();

function opened(ws: WebSocket, timeoutMs = 120_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("websocket open timed out")), timeoutMs);
    ws.once("open", () => {
      clearTimeout(t);
      resolve();
    });
    ws.once("error", (e) => {
      clearTimeout(t);
      reject(e);
    });
  });
}

/**
 * Answers every tool.call at once: a `confirm` with "Yes" (a human who taps at once), anything else with the
 * calculator's result (as the PWA does for `calculator`).
 */
export function autoAnswer(ws: WebSocket): void {
  ws.on("message", (data, isBinary) => {
    if (isBinary) return;
    const s = data.toString();
    if (!s.includes('"tool.call"')) return;
    const f = JSON.parse(s) as { type: string; call_id: string; name: string; action?: string; arguments?: { a?: number; b?: number } };
    if (f.type !== "tool.call") return;
    if (f.name === "confirm") {
      ws.send(JSON.stringify({ type: "tool.result", call_id: f.call_id, name: f.name, result: { message: "Yes", value: true } }));
      return;
    }
    const a = f.arguments?.a ?? 0;
    const b = f.arguments?.b ?? 0;
    const value = f.action === "subtract" ? a - b : f.action === "multiply" ? a * b : a + b;
    ws.send(JSON.stringify({ type: "tool.result", call_id: f.call_id, name: f.name, action: f.action, result: { message: String(value), value } }));
  });
}

/** The calling side. On the relay it acks each result (as the adapter does), so kept results do not pile up. */
export class Agent {
  private readonly pending = new Map<string, Pending>();
  private seq = 0;
  /** Every relay frame type seen, for sanity checks (errors must stay at zero). */
  readonly errors: string[] = [];
  private closedWith = "socket closed";
  /**
   * What `call()` asks: a calculator sum (an automatic tool: the PWA answers it, the session never reports it to
   * an inbox) or a `confirm` (a question a human answers: reported, and pushed on an inbox session).
   */
  tool: "calculator" | "confirm" = "calculator";
  constructor(
    readonly ws: WebSocket,
    private readonly ack: boolean,
    private readonly prefix: string,
  ) {
    ws.on("message", (data, isBinary) => {
      if (isBinary) return;
      const s = data.toString();
      if (s === "pong") return;
      const f = JSON.parse(s) as { type: string; call_id?: string; code?: string; error?: { code: string } };
      if (f.type === "error") this.errors.push(f.code ?? "?");
      if (f.type !== "tool.result" || !f.call_id) return;
      const p = this.pending.get(f.call_id);
      if (!p) return;
      this.pending.delete(f.call_id);
      if (this.ack) ws.send(JSON.stringify({ type: "tool.ack", call_id: f.call_id }));
      if (f.error) p.reject(new Error(`call ${f.call_id}: ${f.error.code}`));
      else p.resolve(now() - p.t0);
    });
    ws.on("close", (code, reason) => {
      this.closedWith = `socket closed (${code} ${reason.toString()})`;
      for (const p of this.pending.values()) p.reject(new Error(this.closedWith));
      this.pending.clear();
    });
  }
  /** One call of `tool`; resolves with its round-trip time in ms. */
  call(timeoutMs = 120_000): Promise<number> {
    const call_id = `${this.prefix}${++this.seq}`;
    const a = this.seq;
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error(this.closedWith));
    return new Promise<number>((resolve, reject) => {
      const t = setTimeout(() => {
        this.pending.delete(call_id);
        reject(new Error(`call ${call_id} timed out`));
      }, timeoutMs);
      this.pending.set(call_id, {
        t0: now(),
        resolve: (ms) => {
          clearTimeout(t);
          resolve(ms);
        },
        reject: (e) => {
          clearTimeout(t);
          reject(e);
        },
      });
      const frame =
        this.tool === "confirm"
          ? { type: "tool.call", call_id, name: "confirm", arguments: { question: `Deploy build ${a}?` } }
          : { type: "tool.call", call_id, name: "calculator", action: "add", arguments: { a, b: 1 } };
      this.ws.send(JSON.stringify(frame));
    });
  }
}

export interface Pair {
  agent: Agent;
  apps: WebSocket[];
  close(): void;
}

function closeAll(socks: WebSocket[]) {
  for (const s of socks) {
    try {
      s.close(CLOSE.normal);
    } catch {
      /* closing */
    }
  }
}

// ------------------------------------------------------------------ the relay

export async function createSession(base: string, label = "bench"): Promise<SessionCreated> {
  const res = await fetch(`${base}/api/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${DEV_RELAY_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ label, ttl_s: 3600 }),
  });
  if (res.status !== 201) throw new Error(`create session: ${res.status} ${await res.text()}`);
  return (await res.json()) as SessionCreated;
}

/** Opens a relay socket and resolves once `hello` arrives. */
export async function relaySocket(s: SessionCreated, token: string, clientId: string): Promise<WebSocket> {
  const ws = new WebSocket(`${s.ws_url}?client_id=${clientId}`, { headers: { authorization: `Bearer ${token}` } });
  const hello = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("no hello")), 120_000);
    const on = (d: WebSocket.RawData) => {
      if (d.toString().includes('"hello"')) {
        clearTimeout(t);
        ws.off("message", on);
        resolve();
      }
    };
    ws.on("message", on);
    ws.once("error", reject);
  });
  await opened(ws);
  await hello;
  return ws;
}

/** Agent + `apps` apps (calculator and confirm) in one relay session; resolves once the agent sees the catalog. */
export async function relayPair(s: SessionCreated, apps: number, tag: string): Promise<Pair> {
  const agentWs = await relaySocket(s, s.agent_token, `ag-${tag}`);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const catalog = new Promise<void>((resolve, reject) => {
    const t = (timer = setTimeout(() => reject(new Error("agent never saw the calculator")), 120_000));
    const on = (d: WebSocket.RawData) => {
      const str = d.toString();
      if (str.startsWith('{"type":"tool.list"') && str.includes('"calculator"')) {
        clearTimeout(t);
        agentWs.off("message", on);
        resolve();
      }
    };
    agentWs.on("message", on);
  });
  catalog.catch(() => {}); // awaited below; this only keeps an early failure from being "unhandled"
  const agent = new Agent(agentWs, true, `${tag}-`);
  const appWs = await Promise.all(
    Array.from({ length: apps }, async (_, i) => {
      const ws = await relaySocket(s, s.app_token, `app${i}-${tag}`);
      autoAnswer(ws);
      ws.send(JSON.stringify({ type: "tool.list", tools: [CALCULATOR, CONFIRM] }));
      return ws;
    }),
  );
  try {
    await catalog;
  } catch (e) {
    closeAll([agentWs, ...appWs]);
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return { agent, apps: appWs, close: () => closeAll([agentWs, ...appWs]) };
}

// ------------------------------------------------------------------ the baselines (same frames, no contract)

export interface BaselineOpts {
  /** The durable floor (bench/baseline-do `DurableRoom`) instead of the bare object: its agent acks. */
  durable?: boolean;
  /** App sockets in the room (default 1), each answering every call. */
  apps?: number;
  /** The durable floor's extra writes (`alarm,deliv,dup,check`; see bench/baseline-do/worker.js). */
  extra?: string;
}

export async function baselinePair(base: string, room: string, o: BaselineOpts = {}): Promise<Pair> {
  const u = `${base.replace(/^http/, "ws")}/${o.durable ? "durable" : "ws"}?room=${room}${o.extra ? `&extra=${o.extra}` : ""}`;
  const agentWs = new WebSocket(`${u}&role=agent`);
  const appWs = Array.from({ length: o.apps ?? 1 }, () => new WebSocket(`${u}&role=app`));
  await Promise.all([opened(agentWs), ...appWs.map((ws) => opened(ws))]);
  for (const ws of appWs) autoAnswer(ws);
  // The durable floor deletes a call on its ack, as the relay does; the bare floors keep nothing to ack.
  return { agent: new Agent(agentWs, o.durable === true, `${room}-`), apps: appWs, close: () => closeAll([agentWs, ...appWs]) };
}

/** The baseline DO's construction id (changes only if the runtime evicted the object). */
export function whoami(ws: WebSocket): Promise<string> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("no whoami answer")), 30_000);
    const on = (d: WebSocket.RawData) => {
      const s = d.toString();
      if (s.includes('"whoami"')) {
        clearTimeout(t);
        ws.off("message", on);
        resolve((JSON.parse(s) as { instance: string }).instance);
      }
    };
    ws.on("message", on);
    ws.send("whoami");
  });
}
