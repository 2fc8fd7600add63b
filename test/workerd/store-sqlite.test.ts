// The Store conformance suite (test/helpers/store-conformance.ts) over the Durable Object's SQLite store, inside
// workerd: each case gets a fresh Session object's storage, the host's transaction is `transactionSync` as in
// worker/session.ts (forgetting the cached counts on a rollback), and a "new wake" is a new SqlStore on the same
// SQLite (nothing cached).
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { SqlStore } from "../../worker/sql-store.js";
import { storeConformance } from "../helpers/store-conformance.js";

storeConformance("the SQLite store", async (body) => {
  const stub = env.SESSIONS.get(env.SESSIONS.newUniqueId());
  await runInDurableObject(stub, (_session, state) => {
    const store = new SqlStore(state.storage.sql);
    body(store, {
      txn: (fn) => {
        try {
          return state.storage.transactionSync(fn);
        } catch (e) {
          store.forget();
          throw e;
        }
      },
      reopen: () => new SqlStore(state.storage.sql),
    });
  });
});
