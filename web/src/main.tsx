// Entry: pair from the URL fragment (then wipe it from the address bar), start the connections,
// register the service worker, render. The first import dials the opened session's socket before the rest
// evaluates (web/src/early.ts, issue 33).
import "./early.js";
import { earlyHold } from "./early-card.js";
import { render } from "preact";
import { App, flash, notice, online } from "./app.js";
import { deviceName } from "./devname.js";
import { redeemPairing } from "./inbox.js";
import { lang, setLang, t } from "./i18n.js";
import { navigate, path } from "./router.js";
import { joining } from "./e2e-watch.js";
import { startPush } from "./push.js";
import { loadMarkdown } from "./tools/markdown.js";
import { afterPaint } from "./conn-watch.js";
import { addInbox, addSession, dropAll, inboxes, pokeAll, reopenSessions, startAll, sweepAll, whenSettled } from "./sessions.js";
import { parsePairCode, parsePairing } from "./storage.js";
import { pinFromLink } from "./direct-pins.js";
import { applyTheme, theme } from "./ui/Settings.js";
import "./styles.css";
import { LineUpError } from "../../shared/client/errors.js";

/** A flag (never a key) that a key pairing was left waiting: only then is the E2E chunk loaded at start. */
const JOINING = "lineup.e2e.joining";

/**
 * `#pair=<code>[&k=<secret>]` (docs/inbox.md, docs/e2e.md "Pairing"): pairs this device with the inbox at
 * once, no tap needed. With a secret it also pairs its key: a device already paired with that inbox claims
 * the code instead of becoming a new device, then sends its hello and waits for a holder's reply.
 */
async function pairDevice(code: string, secret: string | undefined, hash: string): Promise<void> {
  notice.value = { key: "pairing", tone: "info" };
  try {
    const name = await deviceName();
    // Codes are `<inbox>.<secret>` (shared/edge/inbox.ts); only used to find an existing pairing here.
    const known = secret ? inboxes.value.find((x) => x.saved.origin === location.origin && x.saved.inbox_id === code.split(".")[0]) : undefined;
    let ib = known;
    let shown = known?.saved.name ?? name;
    if (known) {
      await known.request("POST", "/api/inbox/e2e/claim", { code });
      pinFromLink(hash, location.origin, known.saved.inbox_id);
    } else {
      const p = await redeemPairing(location.origin, code, name);
      shown = p.name || name;
      addInbox({
        origin: location.origin,
        inbox_id: p.inbox_id,
        device_id: p.device_id,
        device_credential: p.device_credential,
        name: shown,
        pairedAt: Date.now(),
      });
      pinFromLink(hash, location.origin, p.inbox_id);
      ib = inboxes.value.find((x) => x.saved.origin === location.origin && x.saved.inbox_id === p.inbox_id);
    }
    if (!secret || !ib) {
      const done = { key: "pairedAs", vars: { name: shown }, tone: "info", rename: true } as const;
      notice.value = done;
      setTimeout(() => notice.value === done && (notice.value = null), 30_000);
      return;
    }
    try {
      localStorage.setItem(JOINING, "1");
    } catch {
      /* storage off: a reload just does not resume */
    }
    const link = ib;
    // One banner at a time: the "pair again" one waits while this pairing waits for its key.
    joining.value++;
    try {
      const m = await import("./e2e/index.js");
      notice.value = { key: "e2eWaitingKey", vars: { name: shown }, tone: "info" };
      const comparison = await m.joinPairing(link, code, secret);
      // The comparison code stays until dismissed: the person compares it with the sponsor's screen.
      notice.value = { key: "e2ePaired", vars: { name: shown, code: comparison }, tone: "info", rename: !known };
      reopenSessions(link);
    } catch (e) {
      notice.value = { key: "e2eKeyFailed", vars: { e: e instanceof Error ? e.message : String(e) }, tone: "error" };
    } finally {
      joining.value--;
      try {
        localStorage.removeItem(JOINING);
      } catch {
        /* ignore */
      }
    }
  } catch (e) {
    // Unknown, used and expired codes get one answer from the relay (404 invalid_code).
    notice.value =
      e instanceof LineUpError && (e.status === 404 || e.code === "invalid_code")
        ? { key: "pairUsed", tone: "error" }
        : { key: "pairFailed", vars: { e: e instanceof Error ? e.message : String(e) }, tone: "error" };
  }
}

/** Pairing links: `#pair=<code>` (a device of an inbox) and v1 `#s=…&t=…` (a guest session). Also run when
 * only the fragment changes (a link opened in a tab that already shows the app does not reload it). */
function fromFragment(): void {
  const hash = location.hash;
  if (!hash) return;
  const pairCode = parsePairCode(hash);
  // Read before the address bar is cleaned (the secret never goes to the relay: it is the fragment's).
  const secret = pairCode ? (new URLSearchParams(hash.replace(/^#/, "")).get("k") ?? undefined) : undefined;
  const pairing = pairCode ? undefined : parsePairing(hash);
  if (pairCode) {
    // The code must not stay in the address bar, the history or a bookmark, even for the request's time.
    history.replaceState(null, "", "/");
    path.value = "/";
    void pairDevice(pairCode, secret && /^[A-Za-z0-9_-]{43}$/.test(secret) ? secret : undefined, hash);
  } else if (pairing) {
    addSession({ sid: pairing.sid, token: pairing.token, origin: location.origin, label: pairing.label ?? "", addedAt: Date.now() });
    // The token must not stay in the address bar, the history or a bookmark.
    history.replaceState("root", "", "/");
    navigate(`/s/${pairing.sid}`);
    flash.value = t("paired");
    setTimeout(() => (flash.value = ""), 4000);
  } else if (/[#&](?:t|pair)=/.test(hash)) {
    history.replaceState(null, "", location.pathname);
    flash.value = t("invalidLink");
  }
}

/** The app's start: once the early script's card of a waiting question was painted, or none is coming. */
function start(): void {
  setLang(lang.value);
  applyTheme(theme.value);
  fromFragment();
  addEventListener("hashchange", fromFragment);
  startAll();
  // A key pairing left waiting by a reload (its secret is in IndexedDB until the reply arrives).
  if (
    (() => {
      try {
        return localStorage.getItem(JOINING) === "1";
      } catch {
        return false;
      }
    })()
  ) {
    void import("./e2e/index.js").then((m) => m.resumeJoins((id) => inboxes.value.find((x) => `${x.saved.origin} ${x.saved.inbox_id}` === id)));
  }
  startPush(); // issue 16: Web Push re-syncs on every open, reports what this device shows (web/src/push.ts)
  addEventListener("online", () => {
    online.value = true;
    pokeAll();
  });
  addEventListener("offline", () => {
    online.value = false;
    // The OS says the network is gone: treat sockets as dead now, so answers go to the outbox instead of
    // into a half-open socket.
    dropAll();
  });
  document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && pokeAll());
  setInterval(sweepAll, 5_000);

  render(<App />, document.getElementById("app")!);
  // The markdown renderer (a lazy chunk, tools/markdown.tsx) loads once the sessions opened at start have caught up
  // with the relay (at most MARKDOWN_AFTER_MS) and a frame was painted after that: its evaluation took a slow phone's
  // main thread just as a waiting card arrived (issue 33, docs/benchmarks.md) — the catch-up ends a moment after the
  // card's frame, before its paint. Until then a card shows its text as written.
  const MARKDOWN_AFTER_MS = 3_000;
  whenSettled(() => afterPaint(() => void loadMarkdown().catch(() => undefined)), MARKDOWN_AFTER_MS);

  if ("serviceWorker" in navigator && isSecureContext) {
    void navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => undefined);
  }
}

// Issue 33: the early script may be drawing the card of a waiting question (web/src/early-card.ts): the app starts
// once it was painted, or none is coming (at most HOLD_MAX_MS after the dial). Not a top-level await: the build
// would split the shared modules out of the entry chunk.
void earlyHold().then(start);
