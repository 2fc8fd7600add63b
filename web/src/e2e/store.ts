// IndexedDB of the end-to-end layer (docs/e2e.md "Storage"), shared by the app and its service worker:
// per inbox the device's non-extractable ECDH key pair (structured clone keeps it usable, never readable),
// the wraps it received (one per epoch) and its trusted roster; and the pairing secrets this device made
// as a sponsor until their hello is answered. Content keys are never stored: they are unwrapped at load.
// Beside it, its own small database of the sessions pinned sealed (issue 26: once seen sealed, a relay's word
// cannot make a session plaintext again) — separate, so the keys' database keeps its version and an older
// copy of the app or service worker is never blocked by an upgrade.
// Nothing here imports the app (the service worker bundles this file alone).
import type { HolderPublic, WrappedKey } from "../../../shared/crypto/e2e/wrap.js";

export interface DeviceKeys {
  /** `${origin} ${inbox_id}` */
  id: string;
  origin: string;
  inbox_id: string;
  device_id: string;
  pair: CryptoKeyPair;
  publicKey: string;
  /** Wraps by epoch (the latest one this device was given for each). */
  wraps: Record<string, WrappedKey>;
  /** Holder id → public key this device authenticated (its sponsor, then rosters). */
  trusted: Record<string, string>;
  /** The last roster opened (every holder's key), used when this device re-keys or sponsors. */
  holders: HolderPublic[];
}

/** A pairing this device sponsors: the secret went into the link / join command it showed. */
export interface SponsorSecret {
  code_id: string;
  /** `${origin} ${inbox_id}` */
  inbox: string;
  secret: string;
  expires_at: number;
  kind: "device" | "machine";
}

/** A pairing this device joins, kept until the sponsor's reply arrives (it survives a reload). */
export interface JoinPending {
  code_id: string;
  inbox: string;
  secret: string;
  expires_at: number;
}

const DB = "lineup-e2e";
const STORES = ["devices", "sponsor", "joining"] as const;
type StoreName = (typeof STORES)[number];

export const recordId = (origin: string, inboxId: string): string => `${origin} ${inboxId}`;

let opening: Promise<IDBDatabase> | undefined;
function db(): Promise<IDBDatabase> {
  opening ??= new Promise<IDBDatabase>((res, rej) => {
    const r = indexedDB.open(DB, 1);
    r.onupgradeneeded = () => {
      for (const s of STORES) if (!r.result.objectStoreNames.contains(s)) r.result.createObjectStore(s, { keyPath: s === "devices" ? "id" : "code_id" });
    };
    r.onsuccess = () => res(r.result);
    r.onerror = () => {
      opening = undefined;
      rej(r.error ?? new Error("indexedDB"));
    };
  });
  return opening;
}

function tx<T>(store: StoreName, mode: IDBTransactionMode, fn: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  return db().then(
    (d) =>
      new Promise<T>((res, rej) => {
        const t = d.transaction(store, mode);
        const r = fn(t.objectStore(store));
        t.oncomplete = () => res(r.result);
        t.onerror = () => rej(t.error ?? new Error("indexedDB"));
        t.onabort = () => rej(t.error ?? new Error("indexedDB"));
      }),
  );
}

export const getKeys = (id: string): Promise<DeviceKeys | undefined> =>
  tx<DeviceKeys | undefined>("devices", "readonly", (s) => s.get(id) as IDBRequest<DeviceKeys | undefined>);
export const allKeys = (): Promise<DeviceKeys[]> => tx<DeviceKeys[]>("devices", "readonly", (s) => s.getAll() as IDBRequest<DeviceKeys[]>);
export const putKeys = (k: DeviceKeys): Promise<unknown> => tx("devices", "readwrite", (s) => s.put(k));
export const deleteKeys = (id: string): Promise<unknown> => tx("devices", "readwrite", (s) => s.delete(id));

export const sponsorSecrets = (): Promise<SponsorSecret[]> => tx<SponsorSecret[]>("sponsor", "readonly", (s) => s.getAll() as IDBRequest<SponsorSecret[]>);
export const putSponsor = (x: SponsorSecret): Promise<unknown> => tx("sponsor", "readwrite", (s) => s.put(x));
export const deleteSponsor = (codeId: string): Promise<unknown> => tx("sponsor", "readwrite", (s) => s.delete(codeId));

export const joinPending = (): Promise<JoinPending[]> => tx<JoinPending[]>("joining", "readonly", (s) => s.getAll() as IDBRequest<JoinPending[]>);
export const putJoin = (x: JoinPending): Promise<unknown> => tx("joining", "readwrite", (s) => s.put(x));
export const deleteJoin = (codeId: string): Promise<unknown> => tx("joining", "readwrite", (s) => s.delete(codeId));

/** A session this device saw sealed (its hello, its status or its inbox said so): pinned for good. */
export interface SealedPin {
  /** `${origin} ${session_id}` */
  id: string;
  at: number;
}

const PINS_DB = "lineup-e2e-pins";
let openingPins: Promise<IDBDatabase> | undefined;
function pinsDb(): Promise<IDBDatabase> {
  openingPins ??= new Promise<IDBDatabase>((res, rej) => {
    const r = indexedDB.open(PINS_DB, 1);
    r.onupgradeneeded = () => r.result.createObjectStore("pins", { keyPath: "id" });
    r.onsuccess = () => res(r.result);
    r.onerror = () => {
      openingPins = undefined;
      rej(r.error ?? new Error("indexedDB"));
    };
  });
  return openingPins;
}

function pinTx<T>(mode: IDBTransactionMode, fn: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  if (typeof indexedDB === "undefined") return Promise.reject(new Error("no indexedDB"));
  return pinsDb().then(
    (d) =>
      new Promise<T>((res, rej) => {
        const t = d.transaction("pins", mode);
        const r = fn(t.objectStore("pins"));
        t.oncomplete = () => res(r.result);
        t.onerror = () => rej(t.error ?? new Error("indexedDB"));
        t.onabort = () => rej(t.error ?? new Error("indexedDB"));
      }),
  );
}

export const pinId = (origin: string, sid: string): string => `${origin} ${sid}`;
/** True when `sid` of `origin` was pinned sealed on this device (false too when IndexedDB cannot be read). */
export const isPinned = (origin: string, sid: string): Promise<boolean> =>
  pinTx<SealedPin | undefined>("readonly", (s) => s.get(pinId(origin, sid)) as IDBRequest<SealedPin | undefined>).then(
    (p) => p !== undefined,
    () => false,
  );
/** Pins a session sealed (idempotent; nothing unpins it: a pin is a few bytes). */
export const pinSealed = (origin: string, sid: string): Promise<unknown> =>
  pinTx("readwrite", (s) => s.put({ id: pinId(origin, sid), at: Date.now() } satisfies SealedPin)).catch(() => undefined);
