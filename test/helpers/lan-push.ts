// The LAN server (`lineup serve`'s code) with a fake push service on 127.0.0.1, for the tests that follow a
// push end to end outside workerd: started before the file's tests, stopped after, plus the HTTP calls and the
// inbox set-up (machine, session, paired and subscribed devices) those tests all begin with.
import { afterAll, beforeAll, expect } from "vitest";
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import type { FakePushService } from "./fake-push.js";
import { startFakePush } from "./fake-push-server.js";
import { freePort } from "./relay.js";

export type Subscription = ReturnType<FakePushService["subscriber"]>;
export interface PushWorld {
  m: MachineCreated;
  s: SessionCreated;
  devices: { d: DevicePaired; sub: Subscription }[];
}

/** Registers the servers' start and stop with the calling test file; `token` is the LAN server's relay key. */
export function lanWithPush(token: string) {
  let lan: LanServer | undefined;
  let push: Awaited<ReturnType<typeof startFakePush>> | undefined;
  beforeAll(async () => {
    lan = await startLanServer({ port: await freePort(), host: "127.0.0.1", token, allowLocalPush: true });
    push = await startFakePush();
  });
  afterAll(async () => {
    await lan?.close();
    await push?.close();
  });
  const url = () => lan!.url;

  async function call<T>(method: string, path: string, credential?: string, body?: unknown): Promise<{ status: number; body: T }> {
    const r = await fetch(`${url()}${path}`, {
      method,
      headers: { ...(credential ? { authorization: `Bearer ${credential}` } : {}), "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await r.text();
    return { status: r.status, body: (text ? JSON.parse(text) : undefined) as T };
  }

  /** Subscribes a device of the inbox to Web Push at the fake service. */
  async function subscribe(credential: string, name: string): Promise<Subscription> {
    const key = (await call<{ public_key: string }>("GET", "/api/push/key")).body.public_key;
    const sub = push!.fake.subscriber(name);
    expect((await call("PUT", "/api/inbox/push", credential, { subscription: sub, application_server_key: key, lang: "en" })).status).toBe(200);
    return sub;
  }

  /** An inbox with one machine and a session for `projectDir`, and `names` paired devices, each subscribed as `<prefix>-<name>`. */
  async function world(projectDir: string, names: string[], prefix = "dev"): Promise<PushWorld> {
    const m = (await call<MachineCreated>("POST", "/api/inboxes", token, {})).body;
    const s = (await call<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: projectDir, host: "box" })).body;
    const devices: PushWorld["devices"] = [];
    for (const name of names) {
      const code = (await call<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential)).body;
      const d = (await call<DevicePaired>("POST", "/api/pair", undefined, { code: code.code, name })).body;
      devices.push({ d, sub: await subscribe(d.device_credential, `${prefix}-${name}`) });
    }
    return { m, s, devices };
  }

  return {
    get url() {
      return url();
    },
    get fake(): FakePushService {
      return push!.fake;
    },
    call,
    subscribe,
    world,
  };
}
