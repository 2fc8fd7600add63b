// Cost per call on the inbox path (issue 33 item 3), counted on the real relay with meters (bench/count-worker/
// entry.js: the repository's classes, their storage and stubs counted; nothing of the relay changed) in its own
// `wrangler dev`: Durable Object requests (stub calls, alarm invocations, incoming WebSocket messages at 20:1),
// SQLite rows read and written (the cursors' own counts, plus KV-API keys), `setAlarm()` calls and subrequests
// (outgoing fetches: Web Push POSTs), per call — for the bare session (the same meter, so it can be checked
// against bench/lib/count.ts), for calculator calls in an inbox session, and for a `confirm` that is pushed to
// the device and answered by it. One call in flight; counts are taken after the inbox has settled.
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { REPORT_DELAY_MS } from "../../shared/session/report-queue.js";
import type { FakePushService } from "../../test/helpers/fake-push.js";
import { createSession, relayPair, type Pair } from "./clients.js";
import { log, RELAY_VARS, sleep } from "./harness.js";
import { inboxPair, inboxSocket, setupInbox } from "./inbox-clients.js";
import { snapshotRelay, startWrangler } from "./proc.js";

type ByClass = Record<string, number>;
interface Meter {
  requests: ByClass;
  ws_messages: ByClass;
  alarms: ByClass;
  rows_read: ByClass;
  rows_written: ByClass;
  set_alarm: ByClass;
  subrequests: number;
}

/** Per call, one path. `do_requests` is what is billed: stub calls + alarms + incoming WebSocket messages ÷ 20. */
export interface PathCount {
  calls: number;
  do_requests: number;
  stub_calls: ByClass;
  ws_messages_in: number;
  alarm_invocations: number;
  rows_read: ByClass & { total: number };
  /** SQL rows written + KV keys written; `set_alarm` separately (each is billed as one row written). */
  rows_written: ByClass & { total: number };
  set_alarm: number;
  subrequests: number;
}
export interface InboxCount {
  bare: PathCount;
  inbox_calculator: PathCount;
  inbox_confirm_pushed: PathCount;
}

const CALLS = 100;
/** Longer than a session holds a report back (shared/session/report-queue.ts): the alarm that sends or drops it
 * falls inside the phase that caused it. */
const SETTLE_MS = REPORT_DELAY_MS + 500;
const PUSHED = 20;
const per = (x: number, n: number) => Math.round((x / n) * 1000) / 1000;
const sum = (o: ByClass) => Object.values(o).reduce((a, b) => a + b, 0);
const perClass = (o: ByClass, n: number) => {
  const out: ByClass & { total: number } = { total: per(sum(o), n) };
  for (const [k, v] of Object.entries(o)) out[k] = per(v, n);
  return out;
};
function summarize(m: Meter, n: number): PathCount {
  const ws = sum(m.ws_messages);
  const alarms = sum(m.alarms);
  const stubs = sum(m.requests);
  return {
    calls: n,
    do_requests: per(stubs + alarms + ws / 20, n),
    stub_calls: perClass(m.requests, n),
    ws_messages_in: per(ws, n),
    alarm_invocations: per(alarms, n),
    rows_read: perClass(m.rows_read, n),
    rows_written: perClass(m.rows_written, n),
    set_alarm: per(sum(m.set_alarm), n),
    subrequests: per(m.subrequests, n),
  };
}

/** The relay snapshot with the metered entry as its `main`. */
function meteredSnapshot(dir: string): string {
  const toml = snapshotRelay(dir);
  mkdirSync(`${dir}/bench/count-worker`, { recursive: true });
  cpSync("bench/count-worker/entry.js", `${dir}/bench/count-worker/entry.js`);
  writeFileSync(toml, readFileSync(toml, "utf8").replace(/^main = .*$/m, 'main = "bench/count-worker/entry.js"'));
  return toml;
}

export async function countInboxPath(fake: FakePushService): Promise<InboxCount> {
  log("inbox cost: a relay with meters (bench/count-worker/entry.js) in its own wrangler dev");
  rmSync("bench/.tmp/state-inbox-count", { recursive: true, force: true });
  const relay = await startWrangler({ config: meteredSnapshot("bench/.tmp/inbox-count-relay"), vars: RELAY_VARS, persistTo: "bench/.tmp/state-inbox-count" });
  const read = async (): Promise<Meter> => (await (await fetch(`${relay.url}/api/__bench/count`)).json()) as Meter;
  const pairs: Pair[] = [];
  try {
    const setup = await setupInbox(relay.url, fake, "count");
    const live = await inboxSocket(relay.url, setup.device.device_credential);
    const bare = await relayPair(await createSession(relay.url, "count-bare"), 1, "cb");
    const held = new Set<string>();
    const inbox = await inboxPair(setup.session, setup.device, "ci", (h) => held.add(h.call_id));
    pairs.push(bare, inbox);
    const measure = async (f: () => Promise<void>, n: number): Promise<PathCount> => {
      await sleep(SETTLE_MS); // what the warm-up left (reports, pushes, an alarm) is done
      await read();
      await f();
      await sleep(SETTLE_MS); // the inbox hears the last report, the alarms send what is queued or held
      return summarize(await read(), n);
    };
    for (let i = 0; i < 20; i++) {
      await bare.agent.call();
      await inbox.agent.call();
    }
    const bareCount = await measure(async () => {
      for (let i = 0; i < CALLS; i++) await bare.agent.call();
    }, CALLS);
    const calc = await measure(async () => {
      for (let i = 0; i < CALLS; i++) await inbox.agent.call();
    }, CALLS);
    const pushed0 = fake.for(setup.endpoint).length;
    const confirm = await measure(async () => {
      for (let i = 0; i < PUSHED; i++) {
        const call_id = `cost-${i}`;
        const ws = inbox.agent.ws;
        const done = new Promise<void>((resolve) => {
          const on = (d: Buffer) => {
            const s = d.toString();
            if (s.includes('"tool.result"') && s.includes(`"${call_id}"`)) {
              ws.off("message", on);
              ws.send(JSON.stringify({ type: "tool.ack", call_id }));
              resolve();
            }
          };
          ws.on("message", on);
        });
        ws.send(JSON.stringify({ type: "tool.call", call_id, name: "confirm", arguments: { question: `Ship ${i}?` } }));
        const deadline = Date.now() + 60_000;
        while (!(held.has(call_id) && fake.for(setup.endpoint).some((r) => (r.msg as { call?: string }).call === call_id))) {
          if (Date.now() > deadline) throw new Error(`inbox cost: no push for ${call_id}`);
          await sleep(5);
        }
        inbox.answer(call_id);
        await done;
      }
    }, PUSHED);
    log(
      `inbox cost per call: bare ${bareCount.do_requests} DO requests, ${bareCount.rows_written.total} rows written; inbox calculator ${calc.do_requests} / ${calc.rows_written.total}; pushed confirm ${confirm.do_requests} / ${confirm.rows_written.total}, ${confirm.subrequests} subrequests (${fake.for(setup.endpoint).length - pushed0} pushes); ${live.frames()} inbox frames`,
    );
    live.ws.close();
    return { bare: bareCount, inbox_calculator: calc, inbox_confirm_pushed: confirm };
  } finally {
    for (const p of pairs) p.close();
    await relay.stop();
    for (const d of ["bench/.tmp/inbox-count-relay", "bench/.tmp/state-inbox-count"]) rmSync(d, { recursive: true, force: true });
  }
}
