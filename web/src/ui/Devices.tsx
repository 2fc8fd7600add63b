// The devices screen (/devices): this device (rename), the inbox's other devices (rename, revoke), its agent
// machines (revoke), and single-use codes that add a device (a #pair= link, as a QR code) or an agent
// machine (`lineup join CODE`). Everything shown comes live from the inbox socket.
import { useEffect, useState } from "preact/hooks";
import type { CodeIssued } from "../../../shared/contract/inbox.js";
import type { InboxConn } from "../inbox.js";
import { t } from "../i18n.js";
import { inboxes, setDeviceName } from "../sessions.js";
import { ConnectEntry } from "./ConnectApp.js";
import { e2eLoad, e2eOf, rekeyAfterRevoke, rekeyedAt } from "../e2e-watch.js";
import { Lock } from "./Icon.js";
import type { Keyring } from "../e2e/index.js";

type E2EModule = typeof import("../e2e/index.js");

const when = (ms: number): string =>
  ms > 0 ? new Date(ms).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }) : t("never");
const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

interface MemberProps {
  ib: InboxConn;
  kind: "device" | "machine";
  id: string;
  name: string;
  seen: number;
  self?: boolean;
}

function Member({ ib, kind, id, name, seen, self = false }: MemberProps) {
  const [editing, setEditing] = useState(false);
  const [v, setV] = useState(name);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState("");
  const fid = `name-${id}`;
  const save = async (e: Event) => {
    e.preventDefault();
    const n = v.trim();
    if (!n) return;
    setBusy(true);
    setErr("");
    try {
      await ib.rename(id, n);
      if (self) setDeviceName(ib, n);
      setEditing(false);
    } catch (x) {
      setErr(t("requestFailed", { e: errText(x) }));
    } finally {
      setBusy(false);
    }
  };
  const revoke = async () => {
    if (!confirm(t(kind === "device" ? "revokeDeviceConfirm" : "revokeMachineConfirm", { name }))) return;
    setBusy(true);
    setErr("");
    try {
      if (kind === "device") await ib.revokeDevice(id);
      else await ib.revokeMachine(id);
      rekeyAfterRevoke(ib, id); // issue 19: the revoked holder must not read what follows
    } catch (x) {
      setErr(t("requestFailed", { e: errText(x) }));
      setBusy(false);
    }
  };
  return (
    <li class="member" data-id={id}>
      {editing ? (
        <form class="rename" onSubmit={(e) => void save(e)}>
          <label for={fid}>{t("deviceName")}</label>
          <input id={fid} type="text" maxLength={64} autoComplete="off" value={v} onInput={(e) => setV((e.target as HTMLInputElement).value)} />
          <span class="actions">
            <button class="btn primary" type="submit" disabled={busy || !v.trim()}>
              {t("save")}
            </button>
            <button class="btn" type="button" onClick={() => setEditing(false)}>
              {t("cancel")}
            </button>
          </span>
        </form>
      ) : (
        <div class="member-row">
          <span class="meta">
            <b class="member-name">{name}</b>
            <small>{t("lastSeen", { t: when(seen) })}</small>
          </span>
          <span class="actions">
            {kind === "device" && (
              <button
                class="btn"
                type="button"
                aria-label={`${t("rename")} ${name}`}
                onClick={() => {
                  setV(name);
                  setEditing(true);
                }}
              >
                {t("rename")}
              </button>
            )}
            {!self && (
              <button class="btn danger" type="button" disabled={busy} aria-label={`${t("revoke")} ${name}`} onClick={() => void revoke()}>
                {t("revoke")}
              </button>
            )}
          </span>
        </div>
      )}
      {err && (
        <p class="err" role="alert">
          {err}
        </p>
      )}
    </li>
  );
}

function Qr({ text }: { text: string }) {
  const [qr, setQr] = useState<{ size: number; d: string } | "failed" | null>(null);
  useEffect(() => {
    let live = true;
    // Loaded on demand: the encoder is not part of the initial bundle.
    import("../../../shared/text/qr.js").then((m) => live && setQr(m.qrPath(text))).catch(() => live && setQr("failed"));
    return () => {
      live = false;
    };
  }, [text]);
  if (qr === "failed") return <p class="hint">{t("qrFailed")}</p>;
  if (!qr) return <div class="qr" aria-hidden="true" />;
  return (
    <svg class="qr" viewBox={`0 0 ${qr.size} ${qr.size}`} role="img" aria-label={t("qrLabel")} shape-rendering="crispEdges">
      {/* Dark on white in both themes: scanners need the contrast and the quiet zone. */}
      <rect width={qr.size} height={qr.size} fill="#fff" />
      <path d={qr.d} fill="#000" />
    </svg>
  );
}

function CopyBox({ text, label, id }: { text: string; label: string; id: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone(true);
      setTimeout(() => setDone(false), 2000);
    } catch {
      // No clipboard (plain-http LAN page): select the text so the system's copy works.
      const el = document.getElementById(id) as HTMLInputElement | null;
      el?.focus();
      el?.select();
    }
  };
  return (
    <div class="copybox">
      <label class="sr-only" for={id}>
        {label}
      </label>
      <input id={id} type="text" readOnly value={text} onFocus={(e) => (e.target as HTMLInputElement).select()} />
      <button class="btn" type="button" onClick={() => void copy()}>
        {done ? t("copied") : t("copy")}
      </button>
    </div>
  );
}

/** Re-renders when `at` passes, so an expired code says so. */
function useExpired(at: number | undefined): boolean {
  const [, tick] = useState(0);
  useEffect(() => {
    if (!at) return;
    const ms = at - Date.now();
    if (ms <= 0) return;
    const timer = setTimeout(() => tick((n) => n + 1), Math.min(ms + 50, 2 ** 31 - 1));
    return () => clearTimeout(timer);
  }, [at]);
  return at !== undefined && at <= Date.now();
}

const hhmm = (ms: number) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });

function AddCode({ ib, kind }: { ib: InboxConn; kind: "device" | "machine" }) {
  const [code, setCode] = useState<CodeIssued | null>(null);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState("");
  const expired = useExpired(code?.expires_at);
  // E2E inbox and this device holds the key: the link / command carries a pairing secret (docs/e2e.md).
  const [secret, setSecret] = useState("");
  const [ring, setRing] = useState<Keyring | undefined>(undefined);
  const [mod, setMod] = useState<E2EModule | undefined>(undefined);
  const e2e = e2eOf(ib.state.value);
  useEffect(() => {
    if (!ring || !secret || expired) return;
    // Answers the hello as soon as it is there (the inbox state's `pending` also wakes the watcher).
    const timer = setInterval(() => void ring.answerHellos().catch(() => undefined), 2_000);
    return () => clearInterval(timer);
  }, [ring, secret, expired]);
  const create = async () => {
    setBusy(true);
    setErr("");
    try {
      const issued = kind === "device" ? await ib.createPairing() : await ib.createJoinCode();
      let k = "";
      if (e2e && e2e.epoch > 0) {
        const m = await e2eLoad();
        const kr = await m.keyringFor(ib);
        if (kr?.current()) {
          k = m.newPairingSecret();
          await kr.sponsor(issued.code, k, issued.expires_at, kind);
          setRing(kr);
          setMod(m);
        }
      }
      setSecret(k);
      setCode(issued);
    } catch (x) {
      setErr(t("requestFailed", { e: errText(x) }));
    } finally {
      setBusy(false);
    }
  };
  const base = code ? (code.url ?? `${ib.saved.origin}/#pair=${code.code}`) : "";
  const link = base && secret ? `${base}&k=${secret}` : base;
  // --relay: the other computer's default relay may be another one. `#<secret>` never reaches the relay.
  const command = code ? `lineup join ${code.code}${secret ? `#${secret}` : ""} --relay ${ib.saved.origin}` : "";
  // Comparison codes of the pairings this device sponsored (a signal: read here, it re-renders on change).
  const done = ring && mod ? mod.comparisons.value.filter((c) => c.role === "sponsor" && c.inbox === ring.inboxId).map((c) => c.code) : [];
  const hid = `h-add-${kind}`;
  return (
    <section class={`card add-${kind}`} aria-labelledby={hid}>
      <h2 id={hid}>{t(kind === "device" ? "addDevice" : "addMachine")}</h2>
      {code && !expired && (
        <>
          <p class="hint">{t(kind === "device" ? "addDeviceHelp" : "addMachineHelp")}</p>
          {kind === "device" && <Qr text={link} />}
          <CopyBox id={`copy-${kind}`} text={kind === "device" ? link : command} label={t(kind === "device" ? "addDevice" : "addMachine")} />
          <p class="hint">{t("codeExpires", { t: hhmm(code.expires_at) })}</p>
        </>
      )}
      {code && expired && <p class="hint">{t("codeExpired")}</p>}
      {secret && (
        <p class="hint e2e-link">
          <Lock sealed /> {t("lockSealed")}
        </p>
      )}
      {done.map((c) => (
        <p key={c} class="hint e2e-compare" role="status">
          {t("e2eSponsored", { code: c })}
        </p>
      ))}
      {err && (
        <p class="err" role="alert">
          {err}
        </p>
      )}
      <button class={`btn${code && !expired ? "" : " primary"}`} type="button" disabled={busy} onClick={() => void create()}>
        {t(kind === "device" ? "createLink" : "createJoin")}
      </button>
    </section>
  );
}

function InboxDevices({ ib, many }: { ib: InboxConn; many: boolean }) {
  const st = ib.state.value;
  const me = ib.saved.device_id;
  const devices = st?.devices ?? [];
  const mine = devices.find((d) => d.id === me);
  const others = devices.filter((d) => d.id !== me);
  const machines = st?.machines ?? [];
  return (
    <>
      {many && <h2 class="inbox-head">{t("inboxOn", { host: new URL(ib.saved.origin).host })}</h2>}
      <section class="card" aria-labelledby={`h-me-${ib.saved.inbox_id}`}>
        <h2 id={`h-me-${ib.saved.inbox_id}`}>{t("thisDevice")}</h2>
        <ul class="members">
          <Member ib={ib} kind="device" id={me} name={mine?.name ?? ib.saved.name} seen={mine?.last_seen ?? Date.now()} self />
        </ul>
      </section>
      <section class="card" aria-labelledby={`h-others-${ib.saved.inbox_id}`}>
        <h2 id={`h-others-${ib.saved.inbox_id}`}>{t("otherDevices")}</h2>
        {others.length ? (
          <ul class="members">
            {others.map((d) => (
              <Member key={d.id} ib={ib} kind="device" id={d.id} name={d.name} seen={d.last_seen} />
            ))}
          </ul>
        ) : (
          <p class="hint">{t("noOtherDevices")}</p>
        )}
      </section>
      <section class="card" aria-labelledby={`h-machines-${ib.saved.inbox_id}`}>
        <h2 id={`h-machines-${ib.saved.inbox_id}`}>{t("machines")}</h2>
        {machines.length ? (
          <ul class="members">
            {machines.map((m) => (
              <Member key={m.id} ib={ib} kind="machine" id={m.id} name={m.name} seen={m.last_seen} />
            ))}
          </ul>
        ) : (
          <p class="hint">{t("noMachines")}</p>
        )}
      </section>
      {rekeyedAt.value > 0 && (
        <p class="hint" role="status">
          {t("e2eRekeyed")}
        </p>
      )}
      <AddCode ib={ib} kind="device" />
      <AddCode ib={ib} kind="machine" />
    </>
  );
}

export function Devices() {
  const list = inboxes.value;
  return (
    <section class="devices">
      <ConnectEntry />
      {/* OAuth connectors: "Connect an app" (ui/ConnectApp.tsx) */}
      {list.length === 0 ? (
        <div class="card">
          <p>{t("noInbox")}</p>
        </div>
      ) : (
        list.map((ib) => <InboxDevices key={`${ib.saved.origin} ${ib.saved.inbox_id}`} ib={ib} many={list.length > 1} />)
      )}
    </section>
  );
}
