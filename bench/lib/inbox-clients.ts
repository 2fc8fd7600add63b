// The clients of the inbox path (issue 33 item 1), through the relay's public HTTP and WebSocket API only: a
// machine's inbox with one paired device, its push subscription at a local fake push service (test/helpers/
// fake-push.ts: VAPID checked, body decrypted by http_ece), the device's inbox socket (InboxState frames) and its
// socket on the session that answers `calculator` at once — as the PWA does — and every other tool when told.
import WebSocket from "ws";
import { CALCULATOR, CONFIRM } from "../../shared/contract/builtin-tools.js";
import { CLOSE } from "../../shared/contract/close.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { FakePushService } from "../../test/helpers/fake-push.js";
import { Agent, relaySocket, type Pair } from "./clients.js";

export interface InboxSetup {
  machine: MachineCreated;
  device: DevicePaired;
  session: SessionCreated;
  endpoint: string;
}

async function api<T>(base: string, method: string, path: string, token?: string, body?: unknown): Promise<T> {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`inbox bench: ${method} ${path} answered ${r.status}: ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** An inbox, one session in it, one paired device subscribed to pushes at the fake push service. */
export async function setupInbox(base: string, fake: FakePushService, name: string): Promise<InboxSetup> {
  const machine = await api<MachineCreated>(base, "POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: `bench-${name}` });
  const session = await api<SessionCreated>(base, "POST", "/api/inbox/sessions", machine.machine_credential, {
    label: `bench ${name}`,
    project_dir: `/bench/${name}`,
    host: "bench",
    ttl_s: 3600,
  });
  const code = await api<CodeIssued>(base, "POST", "/api/inbox/pairings", machine.machine_credential);
  const device = await api<DevicePaired>(base, "POST", "/api/pair", undefined, { code: code.code, name: "Phone" });
  const { public_key } = await api<{ public_key: string }>(base, "GET", "/api/push/key");
  const sub = fake.subscriber(name);
  await api(base, "PUT", "/api/inbox/push", device.device_credential, { subscription: sub, application_server_key: public_key, lang: "en" });
  return { machine, device, session, endpoint: sub.endpoint };
}

/** The device's inbox socket (`GET /api/inbox/ws`, credential as subprotocol); counts the InboxState frames. */
export async function inboxSocket(base: string, credential: string): Promise<{ ws: WebSocket; frames: () => number }> {
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/api/inbox/ws`, ["lineup.v1", `lineup.token.${credential}`]);
  let n = 0;
  const first = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("inbox socket: no state frame")), 60_000);
    ws.on("message", () => {
      n++;
      clearTimeout(t);
      resolve();
    });
    ws.once("error", reject);
  });
  await first;
  return { ws, frames: () => n };
}

/** A call the device was asked and holds (any tool but calculator) until `answer` is called. */
export interface Held {
  call_id: string;
  name: string;
}

/**
 * Agent + the device's session socket: calculator calls are answered at once; other calls are handed to
 * `onHeld` and answered only by `answer(call_id)` (a confirm's "yes").
 */
export async function inboxPair(
  s: SessionCreated,
  device: DevicePaired,
  tag: string,
  onHeld: (h: Held) => void = () => undefined,
): Promise<Pair & { answer(callId: string): void }> {
  const agentWs = await relaySocket(s, s.agent_token, `ag-${tag}`);
  const catalog = new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("agent never saw the calculator")), 120_000);
    const on = (d: WebSocket.RawData) => {
      const str = d.toString();
      if (str.startsWith('{"type":"tool.list"') && str.includes('"calculator"') && str.includes('"confirm"')) {
        clearTimeout(t);
        agentWs.off("message", on);
        resolve();
      }
    };
    agentWs.on("message", on);
  });
  catalog.catch(() => {});
  const agent = new Agent(agentWs, true, `${tag}-`);
  // A paired device connects as its own id (any other client_id is refused 403 client_id_bound).
  const dev = await relaySocket(s, device.device_credential, device.device_id);
  dev.on("message", (data, isBinary) => {
    if (isBinary) return;
    const str = data.toString();
    if (!str.includes('"tool.call"')) return;
    const f = JSON.parse(str) as { type: string; call_id: string; name: string; action?: string; arguments?: { a?: number; b?: number } };
    if (f.type !== "tool.call") return;
    if (f.name !== "calculator") return onHeld({ call_id: f.call_id, name: f.name });
    const value = (f.arguments?.a ?? 0) + (f.arguments?.b ?? 0);
    dev.send(JSON.stringify({ type: "tool.result", call_id: f.call_id, name: f.name, action: f.action, result: { message: String(value), value } }));
  });
  dev.send(JSON.stringify({ type: "tool.list", tools: [CALCULATOR, CONFIRM] }));
  const close = () => {
    for (const w of [agentWs, dev]) {
      try {
        w.close(CLOSE.normal);
      } catch {
        /* closing */
      }
    }
  };
  try {
    await catalog;
  } catch (e) {
    close();
    throw e;
  }
  return {
    agent,
    apps: [dev],
    close,
    answer: (call_id) => dev.send(JSON.stringify({ type: "tool.result", call_id, name: "confirm", result: { message: "Yes", value: true } })),
  };
}
