// The service worker's end-to-end part (docs/push.md "Sealed sessions in the service worker"): bundled by
// vite.config.ts into /sw-e2e.js (an IIFE: sw.js is a classic worker and loads it with importScripts).
// It opens a sealed call's preview with this device's key from IndexedDB, and seals an answer given on a
// notification. Nothing it opens is stored or logged: the notification shows it and that is all.
import { openPreview, sealFrame, type ContentKey, type Envelope, type Preview } from "../../shared/crypto/e2e/index.js";
import { holderSelf, unwrapContentKey } from "../../shared/crypto/e2e/wrap.js";
import { getKeys, isPinned, recordId, type DeviceKeys } from "./e2e/store.js";
import { tapResult } from "../../shared/tools/meaning.js";

/** The service worker (web/src/sw.ts) that loads this script with importScripts reads `self.lineupE2E`. */
declare const self: ServiceWorkerGlobalScope & { lineupE2E?: unknown };

interface SealedPush {
  inbox: string;
  sid: string;
  call: string;
  name: string;
  from: string;
  epoch?: number;
  preview: Envelope;
}

async function keysOf(rec: DeviceKeys): Promise<Map<number, ContentKey>> {
  const self = await holderSelf(rec.device_id, rec.pair);
  const out = new Map<number, ContentKey>();
  for (const w of Object.values(rec.wraps)) {
    try {
      const ck = await unwrapContentKey({ inboxId: rec.inbox_id, recipient: self, wrapped: w, trusted: rec.trusted });
      out.set(ck.epoch, ck);
    } catch {
      /* a wrap that no longer opens (untrusted after a roster change): skipped */
    }
  }
  return out;
}

const record = (inbox: string): Promise<DeviceKeys | undefined> => getKeys(recordId(self.location.origin, inbox)).catch(() => undefined);

/** The preview of a sealed call, or null when this device cannot open it (no key, another epoch, changed). */
async function open(m: SealedPush): Promise<Preview | null> {
  try {
    const rec = await record(m.inbox);
    if (!rec) return null;
    const keys = await keysOf(rec);
    return await openPreview((e) => keys.get(e), m.sid, m.call, m.from, m.preview);
  } catch {
    return null;
  }
}

/** The same result the app's card sends for that tap (shared/tools/meaning.ts), from the opened preview's options. */
const resultFor = (name: string, p: Preview, action: string) => tapResult(name, action, p.options);

/** The sealed `{result}` of an answer from a notification, as `POST /api/push/answer` takes it; null when it cannot be made. */
async function sealAnswer(m: SealedPush, action: string): Promise<Envelope | null> {
  try {
    const rec = await record(m.inbox);
    if (!rec) return null;
    const keys = await keysOf(rec);
    const preview = await openPreview((e) => keys.get(e), m.sid, m.call, m.from, m.preview);
    // A preview that names another tool than the push: the relay relabelled the card; nothing is answered.
    if (preview.tool !== undefined && preview.tool !== m.name) return null;
    const result = resultFor(m.name, preview, action);
    let ck: ContentKey | undefined;
    for (const k of keys.values()) if (!ck || k.epoch > ck.epoch) ck = k;
    if (!result || !ck) return null;
    const f = await sealFrame(ck, { session_id: m.sid, sender: `app:${rec.device_id}` }, { type: "tool.result", call_id: m.call, name: m.name, result });
    return f.sealed as Envelope;
  } catch {
    return null;
  }
}

/** True when the app pinned this session sealed (issue 26): a plaintext push for it is the relay's word only. */
const pinned = (sid: string): Promise<boolean> => isPinned(self.location.origin, sid).catch(() => false);

self.lineupE2E = { open, sealAnswer, pinned };
