// The key endpoints of end-to-end encryption (docs/e2e.md "The inbox's key state"), for the Worker and the
// LAN server alike: a sub-app mounted by shared/edge/app.ts. Middleware checks the credential and the body's shape
// (bodies of at most E2E_LIMITS.maxBodyBytes); the inbox's object decides the rest (shared/inbox/e2e.ts) and changes
// nothing when it refuses.
import { Hono, type Context } from "hono";
import { ClaimBody, E2E_LIMITS, E2EPutBody, PairHelloBody, PairReplyBody, type E2EAnswer, type E2ERequest } from "../inbox/e2e.js";
import { pairingCodeId } from "../crypto/e2e/pairing.js";
import { parseCode } from "../contract/inbox.js";
import { holder, sha256 } from "./credential.js";
import type { Holder, HostVars } from "./host.js";
import { body as bodyOf, fail } from "./http.js";
import type { z } from "zod";

/** code_id of a pairing or join code as the holders compute it: of its canonical `<inbox>.<secret>` form. */
export const codeIdOf = (code: { inbox: string; secret: string }): Promise<string> => pairingCodeId(`${code.inbox}.${code.secret}`);

const body = <S extends z.ZodType>(schema: S) => bodyOf(schema, { max: E2E_LIMITS.maxBodyBytes });
const member = holder("device", "machine");

async function run<E extends HostVars>(c: Context<E>, who: Holder, req: E2ERequest): Promise<Response> {
  const r: E2EAnswer = await c.var.host.inboxes!.inbox(who.inbox).e2e({ kind: who.kind, id: who.id }, req);
  if ("code" in r) return fail(c, r.status, r.code, r.message);
  if (r.status === 204) return c.body(null, 204);
  return c.json(r.body ?? {}, r.status);
}

export const e2eRoutes = new Hono<HostVars>();

e2eRoutes.get("/api/inbox/e2e", member, (c) => run(c, c.var.holder, { op: "get" }));
e2eRoutes.put("/api/inbox/e2e", member, ...body(E2EPutBody), (c) => run(c, c.var.holder, { op: "put", body: c.req.valid("json") }));
e2eRoutes.post("/api/inbox/e2e/claim", member, ...body(ClaimBody), async (c) => {
  const who = c.var.holder;
  const code = parseCode(c.req.valid("json").code);
  // Another inbox's code is as unknown here as a used one.
  if (!code || code.inbox !== who.inbox) return fail(c, 404, "invalid_code", "this code is unknown, was already used or has expired");
  return run(c, who, { op: "claim", codeHash: await sha256(`${code.inbox}.${code.secret}`), code_id: await codeIdOf(code) });
});
e2eRoutes.post("/api/inbox/e2e/hello", member, ...body(PairHelloBody), (c) => run(c, c.var.holder, { op: "hello", body: c.req.valid("json") }));
e2eRoutes.post("/api/inbox/e2e/reply", member, ...body(PairReplyBody), (c) => run(c, c.var.holder, { op: "reply", body: c.req.valid("json") }));
e2eRoutes.delete("/api/inbox/e2e/pairings/:code_id", member, async (c) => {
  const id = c.req.param("code_id");
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) return fail(c, 404, "not_found", "no such pairing");
  return run(c, c.var.holder, { op: "drop", code_id: id });
});
