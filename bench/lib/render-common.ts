// What the bench renderers share: the systems' labels and colours, the side files of the other modes
// (profile, extras, A/B) and the number formats.
import { existsSync, readFileSync } from "node:fs";
import type { AbResults } from "./ab.js";
import type { SystemName } from "./clients.js";
import type { ExtrasResults } from "./extras.js";
import type { SavedProfile } from "./profile.js";
import type { StartupResults } from "./startup.js";
import type { HttpHookResults } from "./http-hook.js";
import type { InboxScaleResults } from "./inbox-scale.js";
import type { InboxResults } from "./inbox-path.js";
import type { PhoneResults } from "./phone-open.js";
import type { DirectResults } from "./direct-label.js";
import type { RoundRatio } from "./stats.js";

export const LABEL: Record<SystemName, string> = {
  relay: "LineUp relay",
  durable: "durable floor",
  durable_alarm: "durable floor + alarm writes",
  do: "bare Durable Object",
  node: "plain Node ws relay",
};
export const COLOR: Record<SystemName, string> = { relay: "#d9480f", durable: "#7048e8", durable_alarm: "#ae3ec9", do: "#1971c2", node: "#2f9e44" };
export const SYSTEMS: SystemName[] = ["relay", "durable", "durable_alarm", "do", "node"];

export interface Extra {
  profile?: SavedProfile;
  extras?: ExtrasResults;
  ab?: AbResults;
  /** The A/B of the relay with no alarm writes against the relay (bench/ab-noalarm.json), if measured. */
  abNoAlarm?: AbResults;
  /** The agent package's start-up and install size (bench/startup.json, issue 30). */
  startup?: StartupResults;
  /** The http hook against the command hook (bench/http-hook.json, issue 29 item 6). */
  httpHook?: HttpHookResults;
  /** The inbox as it grows (bench/inbox-scale.json, issue 33 item 2), and the figures before its storage was split. */
  inboxScale?: InboxScaleResults;
  inboxScaleBefore?: InboxScaleResults;
  /** The inbox path with push, and its cost per call (bench/inbox.json, issue 33), and the same before the
   * session's reports were coalesced (bench/inbox-before.json). */
  inbox?: InboxResults;
  inboxBefore?: InboxResults;
  /** A phone opening a waiting question, throttled (bench/phone.json, issue 33). */
  phone?: PhoneResults;
  /** The same bench on the app before the latest phone change (bench/phone-before.json; docs/benchmarks.md says which). */
  phoneBefore?: PhoneResults;
  /** The direct path's round trip beside the relay's (bench/direct.json, issue 32). */
  direct?: DirectResults;
}

/** The side files of the other modes, when they exist. */
export function loadExtra(): Extra {
  const read = <T>(f: string): T | undefined => (existsSync(f) ? (JSON.parse(readFileSync(f, "utf8")) as T) : undefined);
  const x: Extra = {};
  const profile = read<SavedProfile>("bench/profile.json");
  const extras = read<ExtrasResults>("bench/extras.json");
  const ab = read<AbResults>("bench/ab.json");
  const abNoAlarm = read<AbResults>("bench/ab-noalarm.json");
  const startup = read<StartupResults>("bench/startup.json");
  if (startup) x.startup = startup;
  const httpHook = read<HttpHookResults>("bench/http-hook.json");
  if (httpHook) x.httpHook = httpHook;
  const inboxScale = read<InboxScaleResults>("bench/inbox-scale.json");
  if (inboxScale) x.inboxScale = inboxScale;
  const inboxScaleBefore = read<InboxScaleResults>("bench/inbox-scale-before.json");
  if (inboxScaleBefore) x.inboxScaleBefore = inboxScaleBefore;
  const inbox = read<InboxResults>("bench/inbox.json");
  if (inbox) x.inbox = inbox;
  const inboxBefore = read<InboxResults>("bench/inbox-before.json");
  if (inboxBefore) x.inboxBefore = inboxBefore;
  const phone = read<PhoneResults>("bench/phone.json");
  if (phone) x.phone = phone;
  const phoneBefore = read<PhoneResults>("bench/phone-before.json");
  if (phoneBefore) x.phoneBefore = phoneBefore;
  const direct = read<DirectResults>("bench/direct.json");
  if (direct) x.direct = direct;
  if (profile) x.profile = profile;
  if (extras) x.extras = extras;
  if (ab) x.ab = ab;
  if (abNoAlarm) x.abNoAlarm = abNoAlarm;
  return x;
}

export const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
export const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
export const mib = (kib: number | null) => (kib === null ? "n/a" : `${(kib / 1024).toFixed(0)} MiB`);
export const kib = (k: number | null) => (k === null ? "n/a" : `${k} KiB`);
export const rr = (x: RoundRatio) => `**${x.median}×** (${x.spread[0]}–${x.spread[1]})`;
export const us = (x: number | null) => (x === null ? "n/a" : `${x} µs`);

/**
 * How a run's `wrangler dev` was set up for wrangler's local trace collector (X_LOCAL_OBSERVABILITY; on by default
 * since wrangler 4.118, workers-sdk PR #14944): it tails every invocation and writes the trace to a SQLite file, fsync
 * included, on the runtime's own thread — a local dev tool, not part of a deployed relay's requests.
 */
export function observabilityNote(v: boolean | undefined): string {
  return v === false
    ? "wrangler's local trace collector off (`X_LOCAL_OBSERVABILITY=false`, for every system)"
    : "wrangler's local trace collector on (its default then; every system paid it)";
}
