// One session: presence and status, the thread (messages both ways + tool cards), the tool log, the composer.
import { useEffect, useRef, useState } from "preact/hooks";
import type { CallEntry, SessionConn, ThreadMessage } from "../conn.js";
import { t } from "../i18n.js";
import { CallCard } from "./Cards.js";
import { Composer } from "./Composer.js";
import { Content } from "./Content.js";
import { ErrorBoundary } from "./ErrorBoundary.js";
import { ToolLog } from "./ToolLog.js";

export function Presence({ conn }: { conn: SessionConn }) {
  const phase = conn.phase.value;
  const p = conn.presence.value;
  const agentOnline = phase === "online" && p?.agent.online;
  const label = phase === "connecting" ? t("connecting") : agentOnline ? t("online") : t("offline");
  return (
    <span class={`presence ${agentOnline ? "on" : phase === "connecting" ? "wait" : "off"}`}>
      <span class="dot" aria-hidden="true" />
      <span>{t("agent")} {label}</span>
      {agentOnline && p?.agent.status && (
        <span class="status" title={p.agent.status.detail}>· {p.agent.status.state}{p.agent.status.detail ? ` — ${p.agent.status.detail}` : ""}</span>
      )}
    </span>
  );
}

type Item = { kind: "msg"; at: number; m: ThreadMessage } | { kind: "call"; at: number; c: CallEntry };

function Bubble({ m, unsent }: { m: ThreadMessage; unsent: boolean }) {
  return (
    <div class={`bubble ${m.mine ? "mine" : m.role === "agent" ? "agent" : "other"}`} data-msg={m.id}>
      <span class="sr-only">{m.mine ? t("you") : t("agent")}:</span>
      <ErrorBoundary>
        <Content blocks={m.content} />
      </ErrorBoundary>
      <time dateTime={new Date(m.ts).toISOString()}>{new Date(m.ts).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}{unsent ? " · ⏳" : ""}</time>
    </div>
  );
}

export function SessionView({ conn }: { conn: SessionConn }) {
  const [tab, setTab] = useState<"chat" | "log">("chat");
  const end = useRef<HTMLDivElement>(null);
  const calls = conn.calls.value;
  const items: Item[] = [
    ...conn.messages.value.map((m): Item => ({ kind: "msg", at: m.ts, m })),
    // Automatic calls live in the tool log; only a canvas's `open` shows its board in the thread.
    ...calls.filter((c) => c.name !== "calculator" && (c.name !== "canvas" || (c.action === "open" && c.result))).map((c): Item => ({ kind: "call", at: c.at, c })),
  ].sort((a, b) => a.at - b.at);
  const pending = calls.filter((c) => c.state === "pending" && c.name !== "canvas" && c.name !== "calculator").length;
  const count = items.length;

  useEffect(() => {
    if (tab === "chat") end.current?.scrollIntoView({ block: "end" });
  }, [count, tab]);

  const notice = conn.notice.value;
  const stop = conn.stopReason.value;
  const unsent = conn.unsent.value;
  return (
    <section class="session" aria-label={conn.label.value || conn.sid}>
      <div class="subbar">
        <Presence conn={conn} />
        {conn.presence.value && conn.presence.value.apps > 1 && <small class="apps">{t("apps", { n: conn.presence.value.apps })}</small>}
      </div>
      {stop && (
        <div class="banner stop" role="alert">
          <span>{t(stop.key, { reason: stop.reason ?? "" })}</span>
          {stop.key !== "stoppedGone" && stop.key !== "stopped4004" && <button class="btn" onClick={() => conn.poke()}>{t("reconnect")}</button>}
        </div>
      )}
      {notice && <div class="banner info" role="status" aria-live="polite">{t(notice.key)}</div>}
      <div class="tabs" role="tablist">
        <button role="tab" id="tab-chat" aria-selected={tab === "chat"} aria-controls="panel" class={tab === "chat" ? "on" : ""} onClick={() => setTab("chat")}>
          {t("chat")}{pending > 0 && <span class="badge" aria-label={t("pending", { n: pending })}>{pending}</span>}
        </button>
        <button role="tab" id="tab-log" aria-selected={tab === "log"} aria-controls="panel" class={tab === "log" ? "on" : ""} onClick={() => setTab("log")}>
          {t("log")} <span class="count">{calls.length}</span>
        </button>
      </div>
      <div id="panel" role="tabpanel" aria-labelledby={`tab-${tab}`} class="panel">
        {tab === "log" ? (
          <ToolLog conn={conn} />
        ) : (
          <div class="thread" aria-live="polite" aria-relevant="additions">
            {items.length === 0 && <p class="empty">{t("noMessages")}</p>}
            {items.map((it) => (it.kind === "msg" ? <Bubble key={it.m.id} m={it.m} unsent={unsent.has(it.m.id)} /> : <CallCard key={it.c.call_id} c={it.c} conn={conn} />))}
            <div ref={end} />
          </div>
        )}
      </div>
      {tab === "chat" && (
        <div class="dock">
          <Composer idPrefix="chat" label={t("typeMessage")} submitLabel={t("send")} onSubmit={(text, content) => conn.sendMessage(text ? [{ type: "text", text }, ...content] : content)} />
        </div>
      )}
    </section>
  );
}
