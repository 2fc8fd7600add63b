// The inbox state's `e2e: {epoch, rekey_needed, pending}` (docs/e2e.md "The inbox's key state"), watched for
// every paired inbox: a device that holds the key answers hellos it sponsors and re-keys when a holder was
// revoked; a device without a key of an E2E inbox is told to pair again. Tiny on purpose: the crypto is a
// dynamic import, fetched only once an inbox actually has E2E turned on.
import { signal } from "@preact/signals";
import type { InboxState } from "../../shared/contract/inbox.js";
import type { InboxConn } from "./inbox.js";
import { joining, needsPairing } from "./state.js";

export interface InboxE2E {
  epoch: number;
  rekey_needed: boolean;
  pending: number;
}
export const e2eOf = (s: InboxState | null | undefined): InboxE2E | undefined => {
  const e = (s as { e2e?: Partial<InboxE2E> } | null | undefined)?.e2e;
  return e && typeof e.epoch === "number"
    ? { epoch: e.epoch, rekey_needed: e.rekey_needed === true, pending: typeof e.pending === "number" ? e.pending : 0 }
    : undefined;
};

// In state.ts (no imports of the E2E chunk), so that chunk can clear them without an import cycle.
export { joining, needsPairing };
/** Set once this device made a new epoch (the Devices screen says so). */
export const rekeyedAt = signal(0);

const busy = new Set<string>();
/** The epoch whose wrap was last fetched per inbox: a state update (they are frequent) fetches it once. */
const fetched = new Map<string, number>();
export const e2eLoad = () => import("./e2e/index.js");

/** After this device revoked `gone`: re-key at once when it holds the current key (docs/e2e.md "Re-keying"). */
export function rekeyAfterRevoke(ib: InboxConn, gone: string): void {
  const s = ib.state.value;
  const e = e2eOf(s);
  if (!s || !e || e.epoch === 0) return;
  const id = `${ib.saved.origin} ${ib.saved.inbox_id}`;
  busy.add(id);
  void e2eLoad()
    .then(async (m) => {
      const kr = await m.keyringFor(ib);
      if (!kr) return;
      const members = [...s.devices.map((d) => d.id), ...s.machines.map((x) => x.id)].filter((x) => x !== gone);
      if ((await kr.rekey(members)) === "done") rekeyedAt.value = Date.now();
    })
    .catch(() => undefined)
    .finally(() => busy.delete(id));
}

export function watchE2E(ib: InboxConn, s: InboxState): void {
  const e = e2eOf(s);
  if (!e || e.epoch === 0) return;
  const id = `${ib.saved.origin} ${ib.saved.inbox_id}`;
  if (busy.has(id)) return;
  busy.add(id);
  void e2eLoad()
    .then(async (m) => {
      const kr = await m.keyringFor(ib);
      const set = new Set(needsPairing.value);
      if (kr?.current()) set.delete(id);
      else if (!(await m.hasKeys(ib.saved.origin, ib.saved.inbox_id, ib.saved.device_id))) set.add(id);
      needsPairing.value = set;
      if (!kr) return;
      if ((kr.epoch !== e.epoch || !kr.keyOf(e.epoch)) && fetched.get(id) !== e.epoch) {
        fetched.set(id, e.epoch);
        await kr.refresh();
      }
      if (e.pending > 0) await kr.answerHellos();
      if (e.rekey_needed && kr.keyOf(e.epoch)) {
        const members = [...s.devices.map((d) => d.id), ...s.machines.map((x) => x.id)];
        if ((await kr.rekey(members)) === "done") rekeyedAt.value = Date.now();
      }
    })
    .catch(() => undefined)
    .finally(() => busy.delete(id));
}
