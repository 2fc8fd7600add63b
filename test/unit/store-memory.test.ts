// The Store conformance suite (test/helpers/store-conformance.ts) over the in-memory store of the LAN server;
// its transaction is MemoryStore.txn, and a "new wake" is the same store (memory is all it has).
import { MemoryStore } from "../../shared/session/store.js";
import { storeConformance } from "../helpers/store-conformance.js";

storeConformance("the memory store", (body) => {
  const store = new MemoryStore();
  body(store, { txn: (fn) => store.txn(fn), reopen: () => store });
});
