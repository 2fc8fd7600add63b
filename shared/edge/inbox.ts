// The inbox endpoints of the shared edge (docs/inbox.md), for the Worker and the LAN server alike.
// Credentials are checked here, in the inbox's object, before any session object is touched; secrets are
// hashed here and only their SHA-256 travels further.
import type { Context, Hono } from "hono";
import type { SessionMeta } from "../session/engine.js";
import { fail, readJson, sessionObject, type EdgeEnv, type EdgeHost } from "./app.js";
import { codeIdOf, e2eRoutes } from "./e2e.js";
import { pushRoutes } from "./push.js";
import type { E2EAnswer, E2ERequest } from "../inbox/e2e.js";
import type { AuthAnswer, Attach, PolicyRefusal, PolicyWrite } from "../inbox/core.js";
import type { PushSub } from "../inbox/push.js";
import type { PushAnswerInput, PushAnswerResult, PushAttentionResult, PushInfo, PushSettings } from "../contract/push.js";
import {
  CreateInboxBody,
  DEVICE_ID_PREFIX,
  formatCredential,
  InboxPolicyBody,
  InboxSessionBody,
  MACHINE_ID_PREFIX,
  parseCode,
  parseCredential,
  RedeemJoinBody,
  RedeemPairingBody,
  RenameBody,
  type CodeIssued,
  type CredentialKind,
  type DeviceInfo,
  type DevicePaired,
  type InboxPolicy,
  type InboxState,
  type MachineCreated,
  type MachineInfo,
  type ParsedCredential,
} from "../contract/inbox.js";
import { CreateSessionBody, describeIssues, LIMITS } from "../contract/protocol.js";
import { randomId, safeEqual, signToken, tokenFrom, type TokenOwner } from "./tokens.js";
import { sha256 } from "../crypto/bytes.js";
import { plainName } from "../text/cut.js";

/** The 409 answers of `PUT /api/inbox/policy` (docs/inbox.md, docs/e2e.md "The inbox policy"). */
const POLICY_REFUSALS: Record<PolicyRefusal, string> = {
  conflict: "the policy changed meanwhile: read it again and retry with its version",
  e2e_on: "this inbox is end-to-end encrypted: the policy is written sealed under its content key, never in plaintext",
  e2e_off: "end-to-end encryption is off for this inbox (epoch 0): write the policy in plaintext",
  stale_epoch: "the sealed policy is not of the inbox's current key epoch: fetch the new key and seal it again",
};

/** One inbox as the edge sees it (a Durable Object stub, or the LAN server's memory). */
export interface EdgeInbox {
  create(inboxId: string, machine: { id: string; name: string; hash: string }): Promise<boolean>;
  auth(kind: CredentialKind, id: string, hash: string, sid?: string): Promise<AuthAnswer>;
  state(you: { kind: CredentialKind; id: string }): Promise<InboxState | undefined>;
  attach(s: Attach): Promise<boolean>;
  issueCode(kind: "pair" | "join", hash: string): Promise<number | undefined>;
  redeem(kind: "pair" | "join", codeHash: string, member: { id: string; name: string; hash: string }, codeId?: string): Promise<"ok" | "invalid" | "full">;
  // End-to-end encryption's key state (shared/inbox/e2e.ts, shared/edge/e2e.ts)
  e2e(who: { kind: CredentialKind; id: string }, req: E2ERequest): Promise<E2EAnswer>;
  e2eEpoch(): Promise<number>;
  rename(kind: CredentialKind, id: string, name: string): Promise<DeviceInfo | MachineInfo | undefined>;
  revoke(kind: CredentialKind, id: string): Promise<boolean>;
  /** Whether an agent machine is (still) a member: the tokens of the sessions it created name it. */
  machineLive(id: string): Promise<boolean>;
  policy(): Promise<InboxPolicy | undefined>;
  setPolicy(w: PolicyWrite, base?: number): Promise<InboxPolicy | PolicyRefusal | undefined>;
  /** The inbox socket of a checked device (the edge has answered 426 to a plain GET already). */
  connect(req: Request, deviceId: string, subprotocol: boolean): Promise<Response>;
  // Web Push (shared/edge/push.ts, shared/inbox/push.ts)
  pushSubscribe(deviceId: string, sub: PushSub, origin: string): Promise<void>;
  pushUnsubscribe(deviceId: string): Promise<void>;
  pushInfo(deviceId: string | undefined, sid?: string): Promise<PushInfo>;
  pushSettings(p: Partial<PushSettings>): Promise<PushSettings>;
  pushAnswer(hash: string, answer: PushAnswerInput): Promise<PushAnswerResult>;
  pushAttention(sid: string, text: string | undefined): Promise<PushAttentionResult>;
}

export { sha256 };

const secret = () => randomId(32);
// Ids start with a letter or digit: a code `-x….…` typed after `lineup join` would read as an option.
const inboxId = () => randomId(9).replace(/^[-_]/, "i");

/** A credential of the request, checked in its inbox. */
export type Holder = ParsedCredential & { name: string; session?: NonNullable<Extract<AuthAnswer, { ok: true }>["session"]> };

/** A session token naming a machine that was revoked since (docs/inbox.md "Revocation"). Tokens without
 * an owner (v1 sessions, OAuth's, those issued before owners existed) are not affected. */
export async function ownerRevoked(host: EdgeHost, owner: TokenOwner | undefined): Promise<boolean> {
  if (!owner) return false;
  if (!host.inboxes) return true;
  return !(await host.inboxes.inbox(owner.inbox).machineLive(owner.machine));
}

/** Checks a device or machine credential; with `sid`, also learns that session's epoch if it is the inbox's. */
export async function checkCredential(host: EdgeHost, raw: string, sid?: string): Promise<Holder | undefined> {
  const cred = parseCredential(raw);
  if (!cred || !host.inboxes) return undefined;
  const a = await host.inboxes.inbox(cred.inbox).auth(cred.kind, cred.id, await sha256(cred.secret), sid);
  if (!a.ok) return undefined;
  return { ...cred, name: a.name, ...(a.session ? { session: a.session } : {}) };
}

export function inboxRoutes<B extends object>(app: Hono<EdgeEnv<B>>, host: (c: Context<EdgeEnv<B>>) => EdgeHost): void {
  const brakeOk = (c: Context, h: EdgeHost) => {
    if (!h.brake.blocked(h.clientAddr, Date.now())) return undefined;
    c.header("retry-after", "60");
    return fail(c, 429, "rate_limited", `more than ${h.brake.perMin} wrong keys, credentials or codes in a minute from this address; wait a minute`);
  };
  /** The request's inbox credential of one of `kinds`, or the refusal. */
  async function holder(c: Context<EdgeEnv<B>>, kinds: readonly CredentialKind[]): Promise<Holder | Response> {
    const h = host(c);
    if (!h.inboxes) return fail(c, 404, "not_found", "this server has no inboxes");
    const blocked = brakeOk(c, h);
    if (blocked) return blocked;
    const { token } = tokenFrom(c.req.raw.headers, new URL(c.req.url));
    const who = token ? await checkCredential(h, token) : undefined;
    if (!who) {
      if (token) h.brake.failed(h.clientAddr, Date.now());
      return fail(c, 401, "unauthorized", "an inbox credential (device or machine) is required; a revoked one is refused");
    }
    if (!kinds.includes(who.kind)) return fail(c, 403, "forbidden", `this endpoint needs a ${kinds.join(" or ")} credential`);
    return who;
  }
  const inboxOf = (c: Context<EdgeEnv<B>>, id: string) => host(c).inboxes!.inbox(id);
  const body = async <T>(c: Context, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof describeIssues>[0] } }): Promise<T | Response> => {
    const b = await readJson(c);
    if (!b.ok) return b.res;
    const p = schema.safeParse(b.value ?? {});
    return p.success ? p.data : fail(c, 400, "bad_request", describeIssues(p.error));
  };

  app.post("/api/inboxes", async (c) => {
    const h = host(c);
    if (!h.inboxes) return fail(c, 404, "not_found", "this server has no inboxes");
    if (!h.relayKey) return fail(c, 503, "not_configured", h.unconfigured);
    const blocked = brakeOk(c, h);
    if (blocked) return blocked;
    const given = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim() ?? "";
    if (!(await safeEqual(given, h.relayKey))) {
      h.brake.failed(h.clientAddr, Date.now());
      return fail(c, 401, "unauthorized", "creating an inbox needs Authorization: Bearer <RELAY_KEY>");
    }
    const b = await body(c, CreateInboxBody);
    if (b instanceof Response) return b;
    const cred: ParsedCredential = { kind: "machine", inbox: inboxId(), id: `${MACHINE_ID_PREFIX}${randomId(8).slice(0, 10)}`, secret: secret() };
    if (!(await inboxOf(c, cred.inbox).create(cred.inbox, { id: cred.id, name: b.machine_name ?? "agent machine", hash: await sha256(cred.secret) }))) return fail(c, 409, "conflict", "inbox id collision; try again");
    return c.json({ inbox_id: cred.inbox, machine_id: cred.id, machine_credential: formatCredential(cred) } satisfies MachineCreated, 201);
  });

  app.get("/api/inbox", async (c) => {
    const who = await holder(c, ["device", "machine"]);
    if (who instanceof Response) return who;
    const s = await inboxOf(c, who.inbox).state({ kind: who.kind, id: who.id });
    return s ? c.json(s) : fail(c, 401, "unauthorized", "no such inbox");
  });

  app.get("/api/inbox/ws", async (c) => {
    const who = await holder(c, ["device"]);
    if (who instanceof Response) return who;
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") return fail(c, 426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
    const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((s) => s.trim());
    return inboxOf(c, who.inbox).connect(c.req.raw, who.id, offered.includes("lineup.v1"));
  });

  app.post("/api/inbox/sessions", async (c) => {
    const who = await holder(c, ["machine"]);
    if (who instanceof Response) return who;
    const b = await body(c, InboxSessionBody);
    if (b instanceof Response) return b;
    const ttl = CreateSessionBody.shape.ttl_s.safeParse(b.ttl_s);
    if (!ttl.success) return fail(c, 400, "bad_request", `ttl_s: ${describeIssues(ttl.error)}`);
    const h = host(c);
    const now = Date.now();
    const sid = randomId(16);
    const dirName = b.project_dir?.replace(/[\\/]+$/, "").split(/[\\/]/).pop();
    const label = plainName(b.label ?? [dirName, b.host].filter(Boolean).join(" · ")) || "agent";
    const meta: SessionMeta = { session_id: sid, expires_at: now + (ttl.data ?? LIMITS.defaultSessionTtlS) * 1000, epoch: now, label, inbox: who.inbox, machine: who.id };
    // A sealed session starts at the inbox's current epoch (docs/e2e.md); the inbox tells it of later ones.
    if (b.sealed === true) {
      const e2eEpoch = await inboxOf(c, who.inbox).e2eEpoch();
      if (e2eEpoch === 0) return fail(c, 409, "e2e_off", "end-to-end encryption is off for this inbox: publish its first key (PUT /api/inbox/e2e) before making sealed sessions");
      Object.assign(meta, { sealed: true, e2e_epoch: e2eEpoch });
    }
    const made = await h.session(sid).init(meta);
    if (made === "exists") return fail(c, 409, "conflict", "session id collision; try again");
    const attach: Attach = { session_id: sid, label, machine_id: who.id, created_at: now, expires_at: made.expires_at, epoch: made.epoch };
    if (b.project_dir !== undefined) attach.project_dir = b.project_dir;
    if (b.host !== undefined) attach.host = b.host;
    if (meta.sealed) attach.sealed = true;
    // A machine revoked since its credential was checked: its new session must not outlive it.
    if (!(await inboxOf(c, who.inbox).attach(attach))) {
      await h.session(sid).destroy(made.epoch).catch(() => false);
      return fail(c, 401, "unauthorized", "this machine was revoked");
    }
    // A re-key between reading the epoch and attaching did not reach this session yet: tell it now.
    if (made.sealed) {
      const after = await inboxOf(c, who.inbox).e2eEpoch();
      if (after > (made.e2e_epoch ?? 0)) await h.session(sid).setE2eEpoch(after);
    }
    return c.json({ ...(await sessionObject(c, h, made)), inbox_id: who.inbox, ...(made.sealed ? { sealed: true } : {}) }, 201);
  });

  app.post("/api/inbox/sessions/:sid/token", async (c) => {
    const who = await holder(c, ["machine"]);
    if (who instanceof Response) return who;
    const again = await checkCredential(host(c), formatCredential(who), c.req.param("sid"));
    // Only the machine that created the session: a revoked machine must hold no token of another's session.
    if (!again?.session || (again.session.machine_id !== undefined && again.session.machine_id !== who.id)) return fail(c, 404, "session_not_found", "no live session of this machine has that id");
    const owner = again.session.machine_id !== undefined ? { inbox: who.inbox, machine: again.session.machine_id } : undefined;
    const agent_token = await signToken(await host(c).tokenSecret(), c.req.param("sid"), "agent", again.session.expires_at, again.session.epoch, owner);
    return c.json({ agent_token, expires_at: again.session.expires_at });
  });

  const issue = (kind: "pair" | "join", kinds: readonly CredentialKind[]) => async (c: Context<EdgeEnv<B>>) => {
    const who = await holder(c, kinds);
    if (who instanceof Response) return who;
    const code = `${who.inbox}.${randomId(12)}`;
    const expires_at = await inboxOf(c, who.inbox).issueCode(kind, await sha256(code));
    if (expires_at === undefined) return fail(c, 401, "unauthorized", "no such inbox");
    const h = host(c);
    const out: CodeIssued = { code, expires_at };
    // The code rides in the fragment: browsers never send it to a server, so it never reaches a log.
    if (kind === "pair") out.url = `${h.publicBase ?? new URL(c.req.url).origin}/#pair=${code}`;
    return c.json(out, 201);
  };
  app.post("/api/inbox/pairings", issue("pair", ["machine", "device"]));
  app.post("/api/inbox/join-codes", issue("join", ["device"]));

  const redeem = (kind: "pair" | "join") => async (c: Context<EdgeEnv<B>>) => {
    const h = host(c);
    if (!h.inboxes) return fail(c, 404, "not_found", "this server has no inboxes");
    const blocked = brakeOk(c, h);
    if (blocked) return blocked;
    const b = await body(c, kind === "pair" ? RedeemPairingBody : RedeemJoinBody);
    if (b instanceof Response) return b;
    const code = parseCode(b.code);
    const invalid = () => {
      h.brake.failed(h.clientAddr, Date.now());
      return fail(c, 404, "invalid_code", "this code is unknown, was already used or has expired (codes are single-use and last 10 minutes)");
    };
    if (!code) return invalid();
    const named = b as { name?: string; machine_name?: string };
    const given = named.name ?? named.machine_name;
    const cred: ParsedCredential = { kind: kind === "pair" ? "device" : "machine", inbox: code.inbox, id: `${kind === "pair" ? DEVICE_ID_PREFIX : MACHINE_ID_PREFIX}${randomId(8).slice(0, 10)}`, secret: secret() };
    const name = given ?? (kind === "pair" ? "device" : "agent machine");
    // The new member is the joiner of this code's pairing mailbox (docs/e2e.md): its hello is accepted.
    const r = await inboxOf(c, code.inbox).redeem(kind, await sha256(`${code.inbox}.${code.secret}`), { id: cred.id, name, hash: await sha256(cred.secret) }, await codeIdOf(code));
    if (r === "invalid") return invalid();
    if (r === "full") return fail(c, 409, "too_many", `this inbox has the most ${kind === "pair" ? "devices" : "machines"} it may have; revoke one first`);
    if (kind === "pair") return c.json({ inbox_id: cred.inbox, device_id: cred.id, device_credential: formatCredential(cred), name } satisfies DevicePaired, 201);
    return c.json({ inbox_id: cred.inbox, machine_id: cred.id, machine_credential: formatCredential(cred) } satisfies MachineCreated, 201);
  };
  app.post("/api/pair", redeem("pair"));
  app.post("/api/join", redeem("join"));

  for (const [path, kind] of [["devices", "device"], ["machines", "machine"]] as const) {
    app.patch(`/api/inbox/${path}/:id`, async (c) => {
      const who = await holder(c, ["device", "machine"]);
      if (who instanceof Response) return who;
      const b = await body(c, RenameBody);
      if (b instanceof Response) return b;
      const r = await inboxOf(c, who.inbox).rename(kind, c.req.param("id"), b.name);
      return r ? c.json(r) : fail(c, 404, "not_found", `no such ${kind} in this inbox`);
    });
    app.delete(`/api/inbox/${path}/:id`, async (c) => {
      const who = await holder(c, ["device", "machine"]);
      if (who instanceof Response) return who;
      if (!(await inboxOf(c, who.inbox).revoke(kind, c.req.param("id")))) return fail(c, 404, "not_found", `no such ${kind} in this inbox`);
      return c.body(null, 204);
    });
  }

  app.get("/api/inbox/policy", async (c) => {
    const who = await holder(c, ["device", "machine"]);
    if (who instanceof Response) return who;
    const p = await inboxOf(c, who.inbox).policy();
    return p ? c.json(p) : fail(c, 401, "unauthorized", "no such inbox");
  });
  app.put("/api/inbox/policy", async (c) => {
    const who = await holder(c, ["device", "machine"]);
    if (who instanceof Response) return who;
    const b = await body(c, InboxPolicyBody);
    if (b instanceof Response) return b;
    const write: PolicyWrite =
      "sealed" in b ? { sealed: b.sealed, by: who.id } : { permissions: Object.fromEntries(Object.entries(b.permissions).filter(([, v]) => v !== undefined)) as Partial<InboxPolicy["permissions"]> };
    const r = await inboxOf(c, who.inbox).setPolicy(write, b.base_version);
    if (typeof r === "string") return fail(c, 409, r, POLICY_REFUSALS[r]);
    return r ? c.json(r) : fail(c, 401, "unauthorized", "no such inbox");
  });

  pushRoutes(app, host, holder, body);
  e2eRoutes(app, host, holder, sha256);
}
