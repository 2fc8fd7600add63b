// The key endpoints of end-to-end encryption (docs/e2e.md "The inbox's key state"), for the Worker and the
// LAN server alike. The edge checks the credential and the body's shape; the inbox's object decides the rest
// (shared/inbox/e2e.ts) and changes nothing when it refuses.
import type { Context, Hono } from "hono";
import { fail, readJson, type EdgeEnv, type EdgeHost } from "./app.js";
import { sha256, type Holder } from "./inbox.js";
import { ClaimBody, E2E_LIMITS, E2EPutBody, PairHelloBody, PairReplyBody, type E2EAnswer, type E2ERequest } from "../inbox/e2e.js";
import { pairingCodeId } from "../crypto/e2e/pairing.js";
import { parseCode, type CredentialKind } from "../contract/inbox.js";
import { describeIssues } from "../contract/protocol.js";

type HolderOf<B extends object> = (c: Context<EdgeEnv<B>>, kinds: readonly CredentialKind[]) => Promise<Holder | Response>;

/** code_id of a pairing or join code as the holders compute it: of its canonical `<inbox>.<secret>` form. */
export const codeIdOf = (code: { inbox: string; secret: string }): Promise<string> => pairingCodeId(`${code.inbox}.${code.secret}`);

export function e2eRoutes<B extends object>(app: Hono<EdgeEnv<B>>, host: (c: Context<EdgeEnv<B>>) => EdgeHost, holder: HolderOf<B>, hash: (s: string) => Promise<string> = sha256): void {
  /** A body of at most E2E_LIMITS.maxBodyBytes, parsed by `schema`. */
  const body = async <T>(c: Context, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof describeIssues>[0] } }): Promise<T | Response> => {
    const b = await readJson(c, E2E_LIMITS.maxBodyBytes);
    if (!b.ok) return b.res;
    const p = schema.safeParse(b.value ?? {});
    return p.success ? p.data : fail(c, 400, "bad_request", describeIssues(p.error));
  };
  const run = async (c: Context<EdgeEnv<B>>, who: Holder, req: E2ERequest) => {
    const r: E2EAnswer = await host(c).inboxes!.inbox(who.inbox).e2e({ kind: who.kind, id: who.id }, req);
    if ("code" in r) return fail(c, r.status, r.code, r.message);
    if (r.status === 204) return c.body(null, 204);
    return c.json(r.body ?? {}, r.status);
  };
  const member = (c: Context<EdgeEnv<B>>) => holder(c, ["device", "machine"]);

  app.get("/api/inbox/e2e", async (c) => {
    const who = await member(c);
    return who instanceof Response ? who : run(c, who, { op: "get" });
  });
  app.put("/api/inbox/e2e", async (c) => {
    const who = await member(c);
    if (who instanceof Response) return who;
    const b = await body(c, E2EPutBody);
    return b instanceof Response ? b : run(c, who, { op: "put", body: b });
  });
  app.post("/api/inbox/e2e/claim", async (c) => {
    const who = await member(c);
    if (who instanceof Response) return who;
    const b = await body(c, ClaimBody);
    if (b instanceof Response) return b;
    const code = parseCode(b.code);
    // Another inbox's code is as unknown here as a used one.
    if (!code || code.inbox !== who.inbox) return fail(c, 404, "invalid_code", "this code is unknown, was already used or has expired");
    return run(c, who, { op: "claim", codeHash: await hash(`${code.inbox}.${code.secret}`), code_id: await codeIdOf(code) });
  });
  app.post("/api/inbox/e2e/hello", async (c) => {
    const who = await member(c);
    if (who instanceof Response) return who;
    const b = await body(c, PairHelloBody);
    return b instanceof Response ? b : run(c, who, { op: "hello", body: b });
  });
  app.post("/api/inbox/e2e/reply", async (c) => {
    const who = await member(c);
    if (who instanceof Response) return who;
    const b = await body(c, PairReplyBody);
    return b instanceof Response ? b : run(c, who, { op: "reply", body: b });
  });
  app.delete("/api/inbox/e2e/pairings/:code_id", async (c) => {
    const who = await member(c);
    if (who instanceof Response) return who;
    const id = c.req.param("code_id");
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) return fail(c, 404, "not_found", "no such pairing");
    return run(c, who, { op: "drop", code_id: id });
  });
}
