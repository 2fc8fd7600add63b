// The inbox endpoints of the shared edge (docs/inbox.md), for the Worker and the LAN server alike: a sub-app
// mounted by shared/edge/app.ts. Credentials are checked by middleware (shared/edge/credential.ts `holder`), in the
// inbox's object, before any session object is touched; secrets are hashed there and only their SHA-256 travels further.
import { SUBPROTOCOL } from "../contract/limits.js";
import { Hono, type Context } from "hono";
import { validator } from "hono/validator";
import type { z } from "zod";
import type { SessionMeta } from "../session/engine.js";
import type { Attach, PolicyRefusal, PolicyWrite } from "../inbox/core.js";
import {
  CreateInboxBody,
  DEVICE_ID_PREFIX,
  formatCredential,
  InboxPolicyBody,
  InboxSessionBody,
  MACHINE_ID_PREFIX,
  parseCode,
  RedeemJoinBody,
  RedeemPairingBody,
  RenameBody,
  type CodeIssued,
  type CredentialKind,
  type DevicePaired,
  type InboxPolicy,
  type MachineCreated,
  type ParsedCredential,
} from "../contract/inbox.js";
import { CreateSessionBody, describeIssues, LIMITS, type SessionCreated } from "../contract/protocol.js";
import { randomId, signToken } from "./tokens.js";
import { plainName } from "../text/cut.js";
import { braked, checkCredential, holder, INBOX_BRAKE, relayKey, sessionObject, sha256 } from "./credential.js";
import { codeIdOf } from "./e2e.js";
import type { Holder, HostVars } from "./host.js";
import { body, cappedJson, fail } from "./http.js";

/** The 409 answers of `PUT /api/inbox/policy` (docs/inbox.md, docs/e2e.md "The inbox policy"). */
const POLICY_REFUSALS: Record<PolicyRefusal, string> = {
  conflict: "the policy changed meanwhile: read it again and retry with its version",
  e2e_on: "this inbox is end-to-end encrypted: the policy is written sealed under its content key, never in plaintext",
  e2e_off: "end-to-end encryption is off for this inbox (epoch 0): write the policy in plaintext",
  stale_epoch: "the sealed policy is not of the inbox's current key epoch: fetch the new key and seal it again",
};

const secret = () => randomId(32);
// Ids start with a letter or digit: a code `-x….…` typed after `lineup join` would read as an option.
const inboxId = () => randomId(9).replace(/^[-_]/, "i");

/** The inbox `id` of this request's server (the routes run after `holder`, or check `inboxes` themselves). */
const inboxOf = <E extends HostVars>(c: Context<E>, id: string) => c.var.host.inboxes!.inbox(id);
const noInboxes = (c: Context<HostVars>) => (c.var.host.inboxes ? undefined : fail(c, 404, "not_found", "this server has no inboxes"));
/** The brake, on the endpoints that take a code rather than a credential. */
const codeGate = async (c: Context<HostVars>, next: () => Promise<void>) => noInboxes(c) ?? braked(c, c.var.host, INBOX_BRAKE(c.var.host)) ?? next();

export const inboxRoutes = new Hono<HostVars>();

inboxRoutes.post("/api/inboxes", relayKey("creating an inbox", INBOX_BRAKE, { before: noInboxes }), ...body(CreateInboxBody), async (c) => {
  const b = c.req.valid("json");
  const cred: ParsedCredential = { kind: "machine", inbox: inboxId(), id: `${MACHINE_ID_PREFIX}${randomId(8).slice(0, 10)}`, secret: secret() };
  if (!(await inboxOf(c, cred.inbox).create(cred.inbox, { id: cred.id, name: b.machine_name ?? "agent machine", hash: await sha256(cred.secret) })))
    return fail(c, 409, "conflict", "inbox id collision; try again");
  return c.json({ inbox_id: cred.inbox, machine_id: cred.id, machine_credential: formatCredential(cred) } satisfies MachineCreated, 201);
});

inboxRoutes.get("/api/inbox", holder("device", "machine"), async (c) => {
  const who = c.var.holder;
  const s = await inboxOf(c, who.inbox).state({ kind: who.kind, id: who.id });
  return s ? c.json(s) : fail(c, 401, "unauthorized", "no such inbox");
});

inboxRoutes.get("/api/inbox/ws", holder("device"), async (c) => {
  const who = c.var.holder;
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") return fail(c, 426, "upgrade_required", "this endpoint takes a WebSocket upgrade");
  const offered = (c.req.header("sec-websocket-protocol") ?? "").split(",").map((s) => s.trim());
  return c.var.host.inboxes!.connect(who.inbox, c.req.raw, who.id, offered.includes(SUBPROTOCOL));
});

/** A refusal of `makeInboxSession`, in the edge's error envelope. */
export type SessionRefusal = { status: 400 | 401 | 409; code: string; message: string };

/**
 * A new session of machine `who`'s inbox (`POST /api/inbox/sessions`; the relay's http hooks, worker/hooks, make one
 * the same way): created, attached to the inbox, its tokens and links. A refusal changes nothing.
 */
export async function makeInboxSession<E extends HostVars>(
  c: Context<E>,
  who: Holder,
  b: z.infer<typeof InboxSessionBody>,
): Promise<{ made: SessionMeta; created: SessionCreated } | SessionRefusal> {
  const ttl = CreateSessionBody.shape.ttl_s.safeParse(b.ttl_s);
  if (!ttl.success) return { status: 400, code: "bad_request", message: `ttl_s: ${describeIssues(ttl.error)}` };
  const h = c.var.host;
  const now = Date.now();
  const sid = randomId(16);
  const dirName = b.project_dir
    ?.replace(/[\\/]+$/, "")
    .split(/[\\/]/)
    .pop();
  const label = plainName(b.label ?? [dirName, b.host].filter(Boolean).join(" · ")) || "agent";
  const meta: SessionMeta = {
    session_id: sid,
    expires_at: now + (ttl.data ?? LIMITS.defaultSessionTtlS) * 1000,
    epoch: now,
    label,
    inbox: who.inbox,
    machine: who.id,
  };
  // A sealed session starts at the inbox's current epoch (docs/e2e.md); the inbox tells it of later ones.
  if (b.sealed === true) {
    const e2eEpoch = await inboxOf(c, who.inbox).e2eEpoch();
    if (e2eEpoch === 0)
      return {
        status: 409,
        code: "e2e_off",
        message: "end-to-end encryption is off for this inbox: publish its first key (PUT /api/inbox/e2e) before making sealed sessions",
      };
    Object.assign(meta, { sealed: true, e2e_epoch: e2eEpoch });
  }
  const made = await h.session(sid).init(meta);
  if (made === "exists") return { status: 409, code: "conflict", message: "session id collision; try again" };
  const attach: Attach = { session_id: sid, label, machine_id: who.id, created_at: now, expires_at: made.expires_at, epoch: made.epoch };
  if (b.project_dir !== undefined) attach.project_dir = b.project_dir;
  if (b.host !== undefined) attach.host = b.host;
  if (meta.sealed) attach.sealed = true;
  // A machine revoked since its credential was checked: its new session must not outlive it.
  if (!(await inboxOf(c, who.inbox).attach(attach))) {
    await h
      .session(sid)
      .destroy(made.epoch)
      .catch(() => false);
    return { status: 401, code: "unauthorized", message: "this machine was revoked" };
  }
  // A re-key between reading the epoch and attaching did not reach this session yet: tell it now.
  if (made.sealed) {
    const after = await inboxOf(c, who.inbox).e2eEpoch();
    if (after > (made.e2e_epoch ?? 0)) await h.session(sid).setE2eEpoch(after);
  }
  return { made, created: await sessionObject(c, h, made) };
}

inboxRoutes.post("/api/inbox/sessions", holder("machine"), ...body(InboxSessionBody), async (c) => {
  const who = c.var.holder;
  const r = await makeInboxSession(c, who, c.req.valid("json"));
  if ("status" in r) return fail(c, r.status, r.code, r.message);
  return c.json({ ...r.created, inbox_id: who.inbox, ...(r.made.sealed ? { sealed: true } : {}) }, 201);
});

inboxRoutes.post("/api/inbox/sessions/:sid/token", holder("machine"), async (c) => {
  const who = c.var.holder;
  const again = await checkCredential(c.var.host, formatCredential(who), c.req.param("sid"));
  // Only the machine that created the session: a revoked machine must hold no token of another's session.
  if (!again?.session || (again.session.machine_id !== undefined && again.session.machine_id !== who.id))
    return fail(c, 404, "session_not_found", "no live session of this machine has that id");
  const owner = again.session.machine_id !== undefined ? { inbox: who.inbox, machine: again.session.machine_id } : undefined;
  const agent_token = await signToken(await c.var.host.tokenSecret(), c.req.param("sid"), "agent", again.session.expires_at, again.session.epoch, owner);
  return c.json({ agent_token, expires_at: again.session.expires_at });
});

for (const [path, kind, kinds] of [
  ["/api/inbox/pairings", "pair", ["machine", "device"]],
  ["/api/inbox/join-codes", "join", ["device"]],
] as const) {
  inboxRoutes.post(path, holder(...kinds), async (c) => {
    const who = c.var.holder;
    const code = `${who.inbox}.${randomId(12)}`;
    const expires_at = await inboxOf(c, who.inbox).issueCode(kind, await sha256(code));
    if (expires_at === undefined) return fail(c, 401, "unauthorized", "no such inbox");
    const out: CodeIssued = { code, expires_at };
    // The code rides in the fragment: browsers never send it to a server, so it never reaches a log.
    if (kind === "pair") out.url = `${c.var.host.publicBase ?? new URL(c.req.url).origin}/#pair=${code}`;
    return c.json(out, 201);
  });
}

/** Redeems a pairing (→ a device) or join code (→ a machine); a wrong code counts against the address's brake. */
async function redeem<E extends HostVars>(c: Context<E>, kind: "pair" | "join", raw: string, given: string | undefined): Promise<Response> {
  const h = c.var.host;
  const code = parseCode(raw);
  const invalid = () => {
    h.brake.failed(h.clientAddr, Date.now());
    return fail(c, 404, "invalid_code", "this code is unknown, was already used or has expired (codes are single-use and last 10 minutes)");
  };
  if (!code) return invalid();
  const cred: ParsedCredential = {
    kind: kind === "pair" ? "device" : "machine",
    inbox: code.inbox,
    id: `${kind === "pair" ? DEVICE_ID_PREFIX : MACHINE_ID_PREFIX}${randomId(8).slice(0, 10)}`,
    secret: secret(),
  };
  const name = given ?? (kind === "pair" ? "device" : "agent machine");
  // The new member is the joiner of this code's pairing mailbox (docs/e2e.md): its hello is accepted.
  const r = await inboxOf(c, code.inbox).redeem(
    kind,
    await sha256(`${code.inbox}.${code.secret}`),
    { id: cred.id, name, hash: await sha256(cred.secret) },
    await codeIdOf(code),
  );
  if (r === "invalid") return invalid();
  if (r === "full") return fail(c, 409, "too_many", `this inbox has the most ${kind === "pair" ? "devices" : "machines"} it may have; revoke one first`);
  if (kind === "pair") return c.json({ inbox_id: cred.inbox, device_id: cred.id, device_credential: formatCredential(cred), name } satisfies DevicePaired, 201);
  return c.json({ inbox_id: cred.inbox, machine_id: cred.id, machine_credential: formatCredential(cred) } satisfies MachineCreated, 201);
}
inboxRoutes.post("/api/pair", codeGate, ...body(RedeemPairingBody), (c) => redeem(c, "pair", c.req.valid("json").code, c.req.valid("json").name));
inboxRoutes.post("/api/join", codeGate, ...body(RedeemJoinBody), (c) => redeem(c, "join", c.req.valid("json").code, c.req.valid("json").machine_name));

for (const [path, kind] of [
  ["devices", "device"],
  ["machines", "machine"],
] as const satisfies readonly (readonly [string, CredentialKind])[]) {
  inboxRoutes.patch(`/api/inbox/${path}/:id`, holder("device", "machine"), ...body(RenameBody), async (c) => {
    const r = await inboxOf(c, c.var.holder.inbox).rename(kind, c.req.param("id"), c.req.valid("json").name);
    return r ? c.json(r) : fail(c, 404, "not_found", `no such ${kind} in this inbox`);
  });
  inboxRoutes.delete(`/api/inbox/${path}/:id`, holder("device", "machine"), async (c) => {
    if (!(await inboxOf(c, c.var.holder.inbox).revoke(kind, c.req.param("id")))) return fail(c, 404, "not_found", `no such ${kind} in this inbox`);
    return c.body(null, 204);
  });
}

inboxRoutes.get("/api/inbox/policy", holder("device", "machine"), async (c) => {
  const p = await inboxOf(c, c.var.holder.inbox).policy();
  return p ? c.json(p) : fail(c, 401, "unauthorized", "no such inbox");
});
// The policy's body picks its form by key (shared/contract/inbox.ts), so it is checked by hono's validator with that picker.
const policyBody = validator("json", (v, c) => {
  const p = InboxPolicyBody.safeParse(v);
  return p.success ? p.data : fail(c, 400, "bad_request", describeIssues(p.error));
});
inboxRoutes.put("/api/inbox/policy", holder("device", "machine"), cappedJson(), policyBody, async (c) => {
  const who = c.var.holder;
  const b = c.req.valid("json");
  const write: PolicyWrite =
    "sealed" in b
      ? { sealed: b.sealed, by: who.id }
      : { permissions: Object.fromEntries(Object.entries(b.permissions).filter(([, v]) => v !== undefined)) as Partial<InboxPolicy["permissions"]> };
  const r: InboxPolicy | PolicyRefusal | undefined = await inboxOf(c, who.inbox).setPolicy(write, b.base_version);
  if (typeof r === "string") return fail(c, 409, r, POLICY_REFUSALS[r]);
  return r ? c.json(r) : fail(c, 401, "unauthorized", "no such inbox");
});
