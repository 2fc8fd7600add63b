// Issue 19's storage promise, checked on the real relay (`wrangler dev --persist-to`): after a sealed
// session's call, answer, chat, image and file, no plaintext marker is anywhere in the relay's storage (every
// file of the persist dir, read raw, WAL included) or in its logs. A plaintext session's marker is found the
// same way, so the scan is shown to work.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ASK_QUESTION } from "../../shared/contract/builtin-tools.js";
import { DEV_RELAY_KEY } from "../../shared/contract/defaults.js";
import {
  generateContentKey,
  generateHolderKeyPair,
  holderSelf,
  makePairHello,
  makePairReply,
  newPairingSecret,
  openFrame,
  pairingCodeId,
  sealFrame,
  sealPreview,
  sealRoster,
  wrapContentKey,
  type Frame as E2EFrame,
} from "../../shared/crypto/e2e/index.js";
import type { CodeIssued, DevicePaired, MachineCreated } from "../../shared/contract/inbox.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { connect, wsUrl, type RawClient } from "../helpers/raw-client.js";
import { startRelay, type RunningRelay } from "../helpers/relay.js";

const mark = (what: string) => `E2EMARK${randomBytes(6).toString("hex")}${what}`;
const M = {
  call: mark("call"),
  preview: mark("preview"),
  answer: mark("answer"),
  chat: mark("chat"),
  image: mark("image"),
  file: mark("file"),
  fileName: mark("fname"),
  status: mark("status"),
  tool: mark("tool"),
};
// Attachments are base64 already: the image's and the file's bytes carry their markers, so their base64
// spellings are searched for too.
const imageB64 = Buffer.concat([randomBytes(30), Buffer.from(M.image), randomBytes(30)]).toString("base64");
const fileB64 = Buffer.from(`report: ${M.file}\n`).toString("base64");
const CONTROL = mark("plaintext");

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}
/** Which of `needles` occur in any file under `dir` or in `logs`, read as raw bytes. */
function found(dir: string, logs: string, needles: string[]): string[] {
  const blobs = [...filesUnder(dir).map((f) => readFileSync(f)), Buffer.from(logs)];
  return needles.filter((n) => blobs.some((b) => b.includes(Buffer.from(n))));
}

describe("a sealed session leaves no plaintext in the relay's storage or logs", () => {
  let relay: RunningRelay;
  let state: string;
  let logs = "";
  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), "lineup-e2e-storage-"));
    relay = await startRelay({ persistTo: state });
    relay.proc.stdout?.on("data", (d: Buffer) => (logs += d.toString()));
    relay.proc.stderr?.on("data", (d: Buffer) => (logs += d.toString()));
  }, 120_000);
  afterAll(async () => {
    await relay?.stop();
    rmSync(state, { recursive: true, force: true });
  });

  const req = async <T>(method: string, path: string, token: string | undefined, body?: unknown, want = 200): Promise<T> => {
    const r = await fetch(relay.url + path, {
      method,
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    expect(r.status, `${method} ${path}`).toBe(want);
    return (r.status === 204 ? {} : await r.json()) as T;
  };

  it("call, answer, chat, image, file and status of a sealed session stay sealed at rest; the plaintext control is found", async () => {
    const m = await req<MachineCreated>("POST", "/api/inboxes", DEV_RELAY_KEY, { machine_name: "laptop" }, 201);
    const machine = await holderSelf(m.machine_id, await generateHolderKeyPair({ extractable: false }));
    const ck = await generateContentKey(1);
    const wrap = await wrapContentKey({ inboxId: m.inbox_id, sender: machine, recipient: machine, key: ck });
    await req("PUT", "/api/inbox/e2e", m.machine_credential, {
      base_epoch: 0,
      epoch: 1,
      wraps: { [machine.id]: wrap },
      roster: await sealRoster(ck, m.inbox_id, machine.id, []),
    });
    // A device pairs through the relay's mailbox.
    const code = await req<CodeIssued>("POST", "/api/inbox/pairings", m.machine_credential, {}, 201);
    const d = await req<DevicePaired>("POST", "/api/pair", undefined, { code: code.code, name: "phone" }, 201);
    const dev = await holderSelf(d.device_id, await generateHolderKeyPair({ extractable: false }));
    const secret = newPairingSecret();
    const codeId = await pairingCodeId(code.code);
    const hello = await makePairHello({ secret, inboxId: m.inbox_id, codeId, joiner: { id: dev.id, publicKey: dev.publicKey } });
    await req("POST", "/api/inbox/e2e/hello", d.device_credential, hello, 201);
    const { reply } = await makePairReply({ secret, inboxId: m.inbox_id, codeId, hello, sponsor: machine, key: ck });
    await req("POST", "/api/inbox/e2e/reply", m.machine_credential, { reply }, 201);

    const s = await req<SessionCreated>("POST", "/api/inbox/sessions", m.machine_credential, { project_dir: "/p/app", sealed: true }, 201);
    const sid = s.session_id;
    const agent: RawClient = await connect(wsUrl(relay.url, sid), { token: s.agent_token, clientId: "agent-1" });
    const app: RawClient = await connect(wsUrl(relay.url, sid), { token: d.device_credential, via: "subprotocol" });
    await agent.next("hello");
    await app.next("hello");
    const actx = { session_id: sid, sender: "agent:agent-1" };
    const pctx = { session_id: sid, sender: `app:${d.device_id}` };
    const keyOf = (e: number) => (e === 1 ? ck : undefined);

    app.send(await sealFrame(ck, pctx, { type: "tool.list", tools: [{ ...ASK_QUESTION, description: `${ASK_QUESTION.description} ${M.tool}` }] }));
    await agent.next((f) => f.type === "tool.list" && Array.isArray(f.tools) && f.tools.length > 0);
    const call = await sealFrame(ck, actx, { type: "tool.call", call_id: "q1", name: "ask_question", arguments: { question: M.call } });
    call.preview = await sealPreview(ck, actx, "q1", { text: M.preview });
    agent.send(call);
    const got = await app.next("tool.call");
    expect((await openFrame(keyOf, sid, got as unknown as E2EFrame)).arguments).toEqual({ question: M.call });
    agent.send(await sealFrame(ck, actx, { type: "status", state: "working", detail: M.status }));
    app.send(await sealFrame(ck, pctx, { type: "tool.result", call_id: "q1", name: "ask_question", result: { message: M.answer } }));
    const res = await agent.next("tool.result");
    expect((await openFrame(keyOf, sid, res as unknown as E2EFrame)).result).toEqual({ message: M.answer });
    agent.send(await sealFrame(ck, actx, { type: "message", id: "m1", content: [{ type: "text", text: M.chat }] }));
    app.send(await sealFrame(ck, pctx, { type: "message", id: "m2", content: [{ type: "image", data: imageB64, mimeType: "image/png" }] }));
    app.send(
      await sealFrame(ck, pctx, {
        type: "message",
        id: "m3",
        content: [{ type: "resource", resource: { uri: `file:///${M.fileName}.txt`, mimeType: "text/plain", blob: fileB64 } }],
      }),
    );
    for (const id of ["m1"]) expect((await app.next((f) => f.type === "message" && f.id === id)).sealed).toBeDefined();
    for (const id of ["m2", "m3"]) expect((await agent.next((f) => f.type === "message" && f.id === id)).sealed).toBeDefined();
    // The kept result stays unacked on purpose: it is at rest too. History is read back sealed.
    const page = await req<{ messages: { sealed?: unknown }[] }>("GET", `/api/sessions/${sid}/messages`, s.agent_token);
    expect(page.messages).toHaveLength(3);
    expect(page.messages.every((x) => x.sealed !== undefined)).toBe(true);

    // Control: a plaintext session of the same relay, whose marker the same scan must find.
    const plain = await req<SessionCreated>("POST", "/api/sessions", DEV_RELAY_KEY, {}, 201);
    const pa = await connect(wsUrl(relay.url, plain.session_id), { token: plain.agent_token });
    await pa.next("hello");
    pa.send({ type: "message", id: "c1", content: [{ type: "text", text: CONTROL }] });
    await req("GET", `/api/sessions/${plain.session_id}`, plain.agent_token);
    // Give SQLite (and the inbox's report) a moment to write, then read every file while the relay runs.
    await new Promise((r) => setTimeout(r, 1500));
    const secrets = [...Object.values(M), imageB64, fileB64];
    expect(found(state, logs, [CONTROL])).toEqual([CONTROL]);
    expect(found(state, logs, secrets)).toEqual([]);
    for (const c of [agent, app, pa]) c.ws.close();
    // And again once the relay stopped (a checkpoint may move the WAL into the database file).
    await relay.stop();
    expect(found(state, logs, [CONTROL])).toEqual([CONTROL]);
    expect(found(state, logs, secrets)).toEqual([]);
  }, 120_000);
});
