// Issue 27 §4: one inbox service is both the edge's interface and the Inbox object's RPC surface. The `satisfies`
// lines are the type test (`npm run typecheck` fails when the object's stub stops being an InboxService); the cases
// check that the object really answers each operation over RPC, not only in its types.
import { env } from "cloudflare:workers";
import { describe, expect, expectTypeOf, it } from "vitest";
import { INBOX_OPS, InboxOps, type InboxRpc, type InboxService } from "../../shared/inbox/service.js";
import { Inbox } from "../../worker/inbox.js";
import type { EdgeHost } from "../../shared/edge/app.js";
import { RELAY_KEY, fetchWorker } from "./helpers.js";

const stubOf = (id: string) => env.INBOXES.get(env.INBOXES.idFromName(id));

// The Worker's host hands the stub to the edge as it stands, and the LAN server an InboxOps.
stubOf("types") satisfies InboxService;
stubOf satisfies NonNullable<EdgeHost["inboxes"]>["inbox"];
expectTypeOf<InboxOps>().toMatchTypeOf<InboxRpc>();
expectTypeOf<Inbox>().toMatchTypeOf<InboxRpc>();

describe("the inbox service", () => {
  it("puts every InboxOps operation on the Inbox object's prototype, where Workers RPC finds it", () => {
    for (const name of INBOX_OPS) expect([name, typeof Inbox.prototype[name]]).toEqual([name, "function"]);
    expect(INBOX_OPS.length).toBe(Object.getOwnPropertyNames(InboxOps.prototype).filter((n) => n !== "constructor").length);
  });

  it("answers the edge's operations over the object's RPC stub", async () => {
    const r = await fetchWorker("/api/inboxes", {
      method: "POST",
      headers: { authorization: `Bearer ${RELAY_KEY}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(r.status).toBe(201);
    const { inbox_id, machine_id } = (await r.json()) as { inbox_id: string; machine_id: string };
    const inbox: InboxService = stubOf(inbox_id);
    expect(await inbox.machineLive(machine_id)).toBe(true);
    expect(await inbox.e2eEpoch()).toBe(0);
    expect((await inbox.state({ kind: "machine", id: machine_id }))?.inbox_id).toBe(inbox_id);
    expect(await inbox.pushInfo(undefined)).toMatchObject({ subscribed: false });
    expect(await inbox.revoke("machine", "mc_nobody")).toBe(false);
  });
});
