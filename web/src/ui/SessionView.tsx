// One session: the thread (messages both ways + tool cards), the tool log, the composer. The connection
// state is in the header (ui/Status.tsx). New items scroll into view unless the human scrolled up to read
// (then a "new below" pill); the oldest waiting card takes the focus when the session opens, so it is the
// first thing the keyboard reaches; a waiting ask_question or work_report is the only text box.
import { signal } from "@preact/signals";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { AUTOMATIC, type CallEntry, type SessionConn, type ThreadMessage } from "../conn.js";
import { t } from "../i18n.js";
import { focusCall } from "../router.js";
import { CallCard } from "./Cards.js";
import { Composer } from "./Composer.js";
import { draftAt } from "../draft.js";
import { Content } from "./Content.js";
import { ErrorBoundary } from "./ErrorBoundary.js";
import { Lock } from "./Icon.js";
import { agentState } from "./Status.js";
import { Inline } from "./Inline.js";
import { joining } from "../e2e-watch.js";

/** The agent's presence as this session's socket sees it; `agentOnline` overrides it while the socket is not
 * up (the inbox knows). */
export function Presence({ conn, agentOnline: known }: { conn: SessionConn; agentOnline?: boolean | undefined }) {
  const phase = known === undefined ? conn.phase.value : "online";
  const p = conn.presence.value;
  const agentOnline = known ?? (phase === "online" && p?.agent.online);
  const label = phase === "connecting" ? t("connecting") : agentOnline ? t("online") : t("offline");
  const status = agentState(conn, p?.agent.status);
  return (
    <span class={`presence ${agentOnline ? "on" : phase === "connecting" ? "wait" : "off"}`}>
      <span class="dot" aria-hidden="true" />
      <span>
        {t("agent")} {label}
      </span>
      {agentOnline && status && <span class="status">· {status}</span>}
    </span>
  );
}

type LogModule = typeof import("./ToolLog.js");
const logMod = signal<LogModule | undefined>(undefined);
/** The tool log is loaded when its tab is first opened: it is not needed to answer (initial JS budget). */
function LazyLog({ conn }: { conn: SessionConn }) {
  useEffect(
    () =>
      void import("./ToolLog.js").then(
        (m) => (logMod.value = m),
        () => undefined,
      ),
    [],
  );
  const M = logMod.value;
  return M ? <M.ToolLog conn={conn} /> : null;
}

type Item = { kind: "msg"; at: number; m: ThreadMessage } | { kind: "call"; at: number; c: CallEntry };

function Bubble({ m, unsent, conn }: { m: ThreadMessage; unsent: boolean; conn: SessionConn }) {
  // The human's own messages sit on their side on every device; another device's say which one.
  const via = m.own && !m.mine ? conn.deviceName(m.from) : undefined;
  const who = m.own ? (m.mine ? t("you") : via ? t("fromDevice", { name: via }) : t("fromOtherDevice")) : m.role === "agent" ? t("agent") : t("someoneElse");
  return (
    <div
      class={`bubble ${m.own ? "mine" : m.role === "agent" ? "agent" : "other"}${m.own && !m.mine ? " via" : ""}`}
      data-msg={m.id}
      data-own={m.own ? "" : undefined}
    >
      {m.own && !m.mine ? <small class="who">{who}</small> : <span class="sr-only">{who}:</span>}
      {m.unreadable ? (
        <p class="err unreadable" data-unreadable="">
          {t("cantOpenMsg")}
        </p>
      ) : m.elided ? (
        <p class="hint">{t("elidedMsg")}</p>
      ) : (
        <ErrorBoundary>
          <Content blocks={m.content} />
        </ErrorBoundary>
      )}
      {conn.sealed.value && <Lock sealed size={12} />}
      <time dateTime={new Date(m.ts).toISOString()}>
        {new Date(m.ts).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}
        {unsent ? " · ⏳" : ""}
      </time>
    </div>
  );
}

/** Within this many pixels of the end counts as "reading the end": new items scroll in. */
const NEAR_END_PX = 120;
const nearEnd = () => document.documentElement.scrollHeight - (scrollY + innerHeight) < NEAR_END_PX;
const human = (c: CallEntry) => !AUTOMATIC.has(c.name);
/** Cards that carry their own text box: while one waits, it is the only composer on screen. */
const OWN_COMPOSER = new Set(["ask_question", "work_report"]);

export function SessionView({ conn }: { conn: SessionConn }) {
  const [tab, setTab] = useState<"chat" | "log">("chat");
  const calls = conn.calls.value;
  const items: Item[] = [
    ...conn.messages.value.map((m): Item => ({ kind: "msg", at: m.ts, m })),
    // Automatic calls live in the tool log; only a canvas's `open` shows its board in the thread.
    ...calls
      .filter((c) => c.name !== "calculator" && (c.name !== "canvas" || (c.action === "open" && c.result)))
      .map((c): Item => ({ kind: "call", at: c.at, c })),
  ].sort((a, b) => a.at - b.at);
  const waiting = calls.filter((c) => c.state === "pending" && human(c));
  const pending = waiting.length;
  const count = items.length;
  const last = items[items.length - 1];

  // Whether the human was at the end before the thread grew: read on scroll, since after a render the page
  // is already longer.
  const atEnd = useRef(true);
  const [below, setBelow] = useState(0);
  useEffect(() => {
    const onScroll = () => {
      atEnd.current = nearEnd();
      if (atEnd.current) setBelow(0);
    };
    addEventListener("scroll", onScroll, { passive: true });
    return () => removeEventListener("scroll", onScroll);
  }, []);
  const toEnd = () => {
    // The page's own end, not the thread's: there the sticky composer sits below the last item, not over it.
    scrollTo(0, document.documentElement.scrollHeight);
    atEnd.current = true;
    setBelow(0);
  };

  // Opening: the card asked for by "Waiting for you", else the oldest waiting card, gets the focus (and the
  // keyboard starts there); with nothing waiting, the end of the thread is shown.
  const [focused, setFocused] = useState<string | null>(null);
  const opened = useRef(false);
  const seen = useRef(count);
  /** The newest item's time when the thread last changed: only later items are "new below" (history that
   * arrives after opening sorts in above). */
  const newest = useRef(0);
  useLayoutEffect(() => {
    if (tab !== "chat") return;
    const lastAt = newest.current;
    newest.current = last?.at ?? 0;
    if (!opened.current) {
      opened.current = true;
      seen.current = count;
      const want = focusCall.value;
      if (want?.sid === conn.sid) return; // the effect below handles it
      const first = waiting[0];
      if (first) setFocused(first.call_id);
      // An empty thread has no end to show: no layout is forced while the app starts (issue 33: a slow phone
      // spent 120–180 ms in it before the waiting card's frames were handled).
      else if (count > 0) toEnd();
      return;
    }
    const added = count - seen.current;
    seen.current = count;
    if (added <= 0) return;
    // My own message always shows; anything else only if I was at the end, else the pill counts what is
    // new at the end.
    if (atEnd.current || (last?.kind === "msg" && last.m.mine)) toEnd();
    else {
      const fresh = items.filter((it) => it.at > lastAt).length;
      if (fresh) setBelow((n) => n + fresh);
    }
  }, [count, tab]);

  const want = focusCall.value;
  useEffect(() => {
    if (!want || want.sid !== conn.sid) return;
    if (tab !== "chat") {
      setTab("chat");
      return;
    }
    if (!calls.some((c) => c.call_id === want.callId)) return; // not here yet: runs again as the thread grows
    focusCall.value = null;
    setFocused(want.callId);
  }, [want, count, tab]);
  useEffect(() => {
    if (!focused || tab !== "chat") return;
    const el = document.querySelector<HTMLElement>(`.thread [data-call="${CSS.escape(focused)}"]`);
    el?.scrollIntoView({ block: "center" });
    // Not when the focus is in the card already: typing begun on the early card goes on in its reply box
    // (web/src/early-card.ts moves the focus there when the app's card takes its place).
    if (!el?.contains(document.activeElement)) el?.focus({ preventScroll: true });
    atEnd.current = nearEnd();
  }, [focused, tab]);

  const notice = conn.notice.value;
  const unsent = conn.unsent.value;
  const refused = conn.refused;
  const carded = waiting.find((c) => OWN_COMPOSER.has(c.name) && !c.unreadable);
  const replyThere = () => {
    const el = document.querySelector<HTMLElement>(`.thread [data-call="${CSS.escape(carded!.call_id)}"] textarea`);
    el?.scrollIntoView({ block: "center" });
    el?.focus({ preventScroll: true });
  };
  return (
    <section class="session" aria-label={conn.label.value || conn.sid}>
      {notice && (
        <div class="banner info" role="status" aria-live="polite">
          {t(notice.key)}
        </div>
      )}
      {conn.direct.refused.value && (
        <div class="banner stop direct-refused" role="alert">
          <span>{t("directRefused")}</span>
          <button class="btn small" type="button" onClick={() => conn.direct.forgetPin()}>
            {t("directForget")}
          </button>
        </div>
      )}
      {conn.sealed.value && conn.noKey.value && joining.value === 0 && (
        <div class="banner stop e2e-no-key" role="alert">
          <span>
            <Inline text={t("e2ePairAgain")} />
          </span>
        </div>
      )}
      <div class="tabs" role="tablist">
        <button role="tab" id="tab-chat" aria-selected={tab === "chat"} aria-controls="panel" class={tab === "chat" ? "on" : ""} onClick={() => setTab("chat")}>
          {t("chat")}
          {pending > 0 && (
            <span class="badge" aria-label={t("pending", { n: pending })}>
              {pending}
            </span>
          )}
        </button>
        <button role="tab" id="tab-log" aria-selected={tab === "log"} aria-controls="panel" class={tab === "log" ? "on" : ""} onClick={() => setTab("log")}>
          {t("log")} <span class="count">{calls.length}</span>
        </button>
      </div>
      <div id="panel" role="tabpanel" aria-labelledby={`tab-${tab}`} class="panel">
        {tab === "log" ? (
          <LazyLog conn={conn} />
        ) : (
          <div class="thread" aria-live="polite" aria-relevant="additions">
            {/* A sealed thread keeps no copy on this device: after a reload it starts empty, and says why. */}
            {items.length === 0 && <p class="empty">{t(conn.sealed.value ? "noMessagesSealed" : "noMessages")}</p>}
            {items.map((it) =>
              it.kind === "msg" ? (
                <Bubble key={it.m.id} m={it.m} unsent={unsent.has(it.m.id)} conn={conn} />
              ) : (
                <CallCard key={it.c.call_id} c={it.c} conn={conn} focused={focused === it.c.call_id} />
              ),
            )}
          </div>
        )}
      </div>
      {tab === "chat" && (below > 0 || !refused) && (
        <div class="dock">
          {below > 0 && (
            <button class="btn pill-below" type="button" onClick={toEnd}>
              ↓ {t("newBelow", { n: below })}
            </button>
          )}
          {refused ? null : carded ? (
            <button class="btn wide reply-there" type="button" onClick={replyThere}>
              {t(carded.name === "work_report" ? "reviewAbove" : "replyAbove")}
            </button>
          ) : (
            <Composer
              idPrefix="chat"
              draft={draftAt(conn.sid, conn.sealed.value)}
              label={t("typeMessage")}
              submitLabel={t("send")}
              onSubmit={(text, content) => conn.sendMessage(text ? [{ type: "text", text }, ...content] : content)}
            />
          )}
        </div>
      )}
    </section>
  );
}
