// "Connect an app" (/connect, docs/mcp.md "OAuth connectors"): an OAuth connector (claude.ai, ChatGPT,
// Claude Desktop…) shows a short code on the computer; this screen takes it — typed, or filled in from the QR
// link's `#code=` and sent only on a tap — shows who asks and where the answer goes, and Allow / Deny with this device's credential. Allow
// creates a session in the inbox labelled with the app's name. Below, the inbox's connected apps (name,
// connected, last used) with Revoke: a revoked app's tokens are refused at once.
import { signal } from "@preact/signals";
import { useEffect, useState } from "preact/hooks";
import type { ConnectRequestInfo, GrantInfo } from "../../../shared/contract/oauth.js";
import { ct } from "../connect-i18n.js";
import { type InboxConn } from "../inbox.js";
import { navigate } from "../router.js";
import { inboxes } from "../sessions.js";
import { LineUpError } from "../../../shared/client/errors.js";

const when = (ms: number): string => new Date(ms).toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const pretty = (c: string): string => {
  const s = c.toUpperCase().replace(/[^A-Z]/g, "");
  return s.length === 8 ? `${s.slice(0, 4)}-${s.slice(4)}` : c;
};

/** The code of a `#code=` link, read once; it leaves the address bar at once (it is a secret for 10 minutes). */
function codeFromFragment(): string {
  const m = /^#code=([A-Za-z-]{1,16})$/.exec(location.hash);
  if (location.hash.startsWith("#code=")) history.replaceState(null, "", location.pathname);
  return m ? pretty(m[1]!) : "";
}

/** Whether an inbox's relay has OAuth connectors: the Worker has them, the LAN server (`lineup serve`) has
 * none and answers their API 404. Asked once per inbox; unknown (offline) counts as "has". */
const oauthAt = signal<Record<string, boolean>>({});
const asked = new Set<string>();
const inboxKey = (ib: InboxConn): string => `${ib.saved.origin} ${ib.saved.inbox_id}`;
function probe(ib: InboxConn): void {
  const k = inboxKey(ib);
  if (asked.has(k)) return;
  asked.add(k);
  const known = (v: boolean) => (oauthAt.value = { ...oauthAt.value, [k]: v });
  ib.request("GET", "/api/inbox/oauth/grants").then(
    () => known(true),
    (e: unknown) => (e instanceof LineUpError && e.status === 404 ? known(false) : asked.delete(k)),
  );
}
const withOAuth = (list: InboxConn[]): InboxConn[] => list.filter((ib) => oauthAt.value[inboxKey(ib)] !== false);

type Step = { kind: "enter" } | { kind: "review"; info: ConnectRequestInfo } | { kind: "done"; allowed: boolean; name: string };

function Grants({ ib, version }: { ib: InboxConn; version: number }) {
  const [list, setList] = useState<GrantInfo[] | null>(null);
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState("");
  const load = () =>
    ib
      .request<{ grants: GrantInfo[] }>("GET", "/api/inbox/oauth/grants")
      .then((r) => setList(r.grants))
      .catch((e: unknown) => setErr(ct("failed", { e: errText(e) })));
  useEffect(() => {
    void load();
  }, [ib, version]);
  const revoke = async (g: GrantInfo) => {
    if (!confirm(ct("revokeConfirm", { name: g.client_name }))) return;
    setBusy(g.id);
    setErr("");
    try {
      await ib.request<void>("DELETE", `/api/inbox/oauth/grants/${encodeURIComponent(g.id)}`);
      await load();
    } catch (e) {
      setErr(ct("failed", { e: errText(e) }));
    } finally {
      setBusy("");
    }
  };
  return (
    <section class="card grants" aria-labelledby="h-grants">
      <h2 id="h-grants">{ct("apps")}</h2>
      {list && list.length === 0 && <p class="hint">{ct("noApps")}</p>}
      {list && list.length > 0 && (
        <ul class="members">
          {list.map((g) => (
            <li class="member grant" key={g.id} data-id={g.id}>
              <div class="member-row">
                <span class="meta">
                  <b class="member-name">{g.client_name}</b>
                  <small>
                    {ct("connectedAt", { t: when(g.created_at) })} · {g.last_used ? ct("lastUsed", { t: when(g.last_used) }) : ct("neverUsed")}
                  </small>
                  <small>{g.client_host ?? g.redirect_host}</small>
                </span>
                <span class="actions">
                  <button
                    class="btn danger"
                    type="button"
                    disabled={busy === g.id}
                    aria-label={`${ct("revoke")} ${g.client_name}`}
                    onClick={() => void revoke(g)}
                  >
                    {ct("revoke")}
                  </button>
                </span>
              </div>
            </li>
          ))}
        </ul>
      )}
      {err && (
        <p class="err" role="alert">
          {err}
        </p>
      )}
    </section>
  );
}

export function ConnectApp() {
  const all = inboxes.value;
  useEffect(() => all.forEach(probe), [all]);
  const list = withOAuth(all);
  // The relay that served this page is where a code shown by it lives: its inbox comes first.
  const sorted = [...list.filter((ib) => ib.saved.origin === location.origin), ...list.filter((ib) => ib.saved.origin !== location.origin)];
  const [pick, setPick] = useState(0);
  const [code, setCode] = useState(codeFromFragment);
  const [step, setStep] = useState<Step>({ kind: "enter" });
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState("");
  const [version, setVersion] = useState(0);
  const ib = sorted[Math.min(pick, sorted.length - 1)];

  const lookup = async (c: string) => {
    if (!ib || !c.trim()) return;
    setBusy(true);
    setErr("");
    try {
      setStep({ kind: "review", info: await ib.request<ConnectRequestInfo>("POST", "/api/inbox/oauth/lookup", { code: c }) });
    } catch (e) {
      setErr(e instanceof LineUpError && e.status === 404 ? ct("unknownCode") : ct("failed", { e: errText(e) }));
    } finally {
      setBusy(false);
    }
  };
  // A `#code=` link only fills the code in: nothing is asked of the relay until the human taps Continue (a
  // link anyone can send must not act with this device's credential — not even a lookup, which counts
  // against this address's brake when wrong — issue 26 §10).

  const decide = async (info: ConnectRequestInfo, allow: boolean) => {
    if (!ib) return;
    setBusy(true);
    setErr("");
    try {
      await ib.request("POST", "/api/inbox/oauth/decide", { code: info.code, allow });
      setStep({ kind: "done", allowed: allow, name: info.client_name });
      setCode("");
      setVersion((v) => v + 1);
    } catch (e) {
      setErr(e instanceof LineUpError && e.status === 404 ? ct("unknownCode") : ct("failed", { e: errText(e) }));
    } finally {
      setBusy(false);
    }
  };

  if (!ib) {
    return (
      <section class="devices connect">
        <div class="card">
          <p>{ct(all.length > 0 ? "noOAuth" : "noInbox")}</p>
        </div>
      </section>
    );
  }
  return (
    <section class="devices connect">
      {sorted.length > 1 && (
        <div class="card field">
          <label for="connect-inbox">{ct("which")}</label>
          <select id="connect-inbox" value={String(pick)} onChange={(e) => setPick(Number((e.target as HTMLSelectElement).value))}>
            {sorted.map((x, i) => (
              <option key={`${x.saved.origin} ${x.saved.inbox_id}`} value={String(i)}>{`${new URL(x.saved.origin).host} · ${x.saved.name}`}</option>
            ))}
          </select>
        </div>
      )}
      {step.kind === "enter" && (
        <form
          class="card connect-code"
          onSubmit={(e) => {
            e.preventDefault();
            void lookup(code);
          }}
        >
          <h2>{ct("title")}</h2>
          <p class="hint">{ct("intro")}</p>
          <label for="connect-code">{ct("codeLabel")}</label>
          <input
            id="connect-code"
            type="text"
            autoComplete="off"
            autoCapitalize="characters"
            spellcheck={false}
            maxLength={16}
            placeholder={ct("codePlaceholder")}
            value={code}
            onInput={(e) => setCode((e.target as HTMLInputElement).value)}
          />
          <button class="btn primary" type="submit" disabled={busy || !code.trim()}>
            {busy ? ct("looking") : ct("next")}
          </button>
        </form>
      )}
      {step.kind === "review" && (
        <section class="card connect-review" aria-labelledby="h-review">
          <h2 id="h-review">{ct("wants", { name: step.info.client_name })}</h2>
          <p>{ct("what", { name: step.info.client_name })}</p>
          <p class="hint">{step.info.client_host ? ct("verified", { host: step.info.client_host }) : ct("unverified")}</p>
          <p class="redirect-host">{ct("redirect", { host: step.info.redirect_host })}</p>
          {step.info.redirect_loopback && (
            <p class="banner warn" role="note">
              {ct("loopback")}
            </p>
          )}
          <p class="hint">{ct("expires", { t: new Date(step.info.expires_at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) })}</p>
          <span class="actions">
            <button class="btn primary" type="button" disabled={busy} onClick={() => void decide(step.info, true)}>
              {ct("allow")}
            </button>
            <button class="btn" type="button" disabled={busy} onClick={() => void decide(step.info, false)}>
              {ct("deny")}
            </button>
          </span>
        </section>
      )}
      {step.kind === "done" && (
        <section class="card connect-done" role="status">
          <p>{ct(step.allowed ? "allowed" : "denied", { name: step.name })}</p>
          <button class="btn" type="button" onClick={() => setStep({ kind: "enter" })}>
            {ct("another")}
          </button>
        </section>
      )}
      {err && (
        <p class="err" role="alert">
          {err}
        </p>
      )}
      <Grants ib={ib} version={version} />
    </section>
  );
}

/** The devices screen's way in (one line there): shown once this device is in an inbox. */
export function ConnectEntry() {
  const all = inboxes.value;
  useEffect(() => all.forEach(probe), [all]);
  if (withOAuth(all).length === 0) return null;
  return (
    <a
      class="btn wide connect-entry"
      href="/connect"
      onClick={(e) => {
        e.preventDefault();
        navigate("/connect");
      }}
    >
      {ct("entry")}
    </a>
  );
}

/** The screen's title, for the shell's header (app.tsx reads it from this lazily loaded module). */
export const connectTitle = (): string => ct("title");
