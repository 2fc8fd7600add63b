// A pending tool call as a card in the thread; once it is settled it collapses to a row with what was asked
// and how it ended, in words (approved, changes requested and declined each look different).
import { useEffect, useState } from "preact/hooks";
import { ANSWERS } from "../../../shared/tools/meaning.js";
import type { CallEntry, SessionConn } from "../conn.js";
import { t } from "../i18n.js";
import type { Answer } from "../tools/calculator.js";
import { Markdown } from "../tools/markdown.js";
import { Board } from "./Board.js";
import { Composer } from "./Composer.js";
import { ErrorBoundary } from "./ErrorBoundary.js";
import { Lock, ToolIcon } from "./Icon.js";
import { PermissionCardLazy } from "../tools/permission-lazy.js";
import { kindOf } from "./Status.js";
import { closeNotification } from "../notif.js";
import { draftAt, dropDraft, type DraftAt, useDraft } from "../draft.js";
import { takeEarlyIntent } from "../early-card.js";
import { headline, SettledCard, str, title } from "./Settled.js";

/** `draft`: where the text typed into this card is kept until it is sent (web/src/draft.ts). */
type Props = { c: CallEntry; answer: (a: Answer) => void; draft: DraftAt };

/**
 * Select, then submit — for one option as for several. A tap only marks an option (it can be changed); the
 * answer goes when Submit is tapped. Chosen over an undo window: nothing is sent that the human did not
 * confirm, no timer can send a half-meant answer while the phone locks or the tab closes, and a long label
 * can be read whole after it is marked (docs/pwa.md "Mis-taps").
 */
function ChoiceCard({ c, answer }: Props) {
  const options = Array.isArray(c.args.options) ? c.args.options.map((o) => String(o)) : [];
  const multi = c.args.multiple === true;
  // Indices, not labels: two options may read the same.
  const [picked, setPicked] = useState<number[]>([]);
  const name = `ch-${c.call_id}`;
  const mark = (i: number, on: boolean) => setPicked(multi ? (on ? [...picked, i].sort((a, b) => a - b) : picked.filter((x) => x !== i)) : [i]);
  const submit = (e: Event) => {
    e.preventDefault();
    const selected = picked.map((i) => options[i]!);
    if (selected.length) answer({ result: ANSWERS.picked(selected) });
  };
  return (
    <form class="choice" onSubmit={submit}>
      <fieldset class="options">
        <legend class="sr-only">{str(c.args.question)}</legend>
        {options.map((o, i) => (
          <label class={`option ${multi ? "check" : "radio"}${picked.includes(i) ? " on" : ""}`} key={i}>
            <input
              type={multi ? "checkbox" : "radio"}
              name={name}
              value={String(i)}
              checked={picked.includes(i)}
              onChange={(e) => mark(i, (e.target as HTMLInputElement).checked)}
            />
            <span class="opt-text">{o}</span>
          </label>
        ))}
      </fieldset>
      <button class="btn primary" type="submit" disabled={!picked.length}>
        {t("submit")}
      </button>
    </form>
  );
}

function ConfirmCard({ c, answer }: Props) {
  return (
    <div class="options two" role="group" aria-label={str(c.args.question)}>
      <button class="btn primary" type="button" onClick={() => answer({ result: ANSWERS.yes() })}>
        {str(c.args.yes_label, t("yes"))}
      </button>
      <button class="btn" type="button" onClick={() => answer({ result: ANSWERS.no() })}>
        {str(c.args.no_label, t("no"))}
      </button>
    </div>
  );
}

function InputCard({ c, answer, draft }: Props) {
  const [v, setV] = useDraft(draft, str(c.args.default));
  const id = `in-${c.call_id}`;
  const multi = c.args.multiline === true;
  // A blank answer only when the agent said what blank means (it gave a default).
  const blankOk = typeof c.args.default === "string";
  const blocked = !blankOk && !v.trim();
  const submit = (e: Event) => {
    e.preventDefault();
    if (blocked) return;
    answer({ result: { message: v } });
    dropDraft(draft);
  };
  return (
    <form class="input-card" onSubmit={submit}>
      <label class="sr-only" for={id}>
        {str(c.args.question)}
      </label>
      {multi ? (
        <textarea id={id} rows={4} placeholder={str(c.args.placeholder)} value={v} onInput={(e) => setV((e.target as HTMLTextAreaElement).value)} />
      ) : (
        <input id={id} type="text" placeholder={str(c.args.placeholder)} value={v} onInput={(e) => setV((e.target as HTMLInputElement).value)} />
      )}
      <button class="btn primary" type="submit" disabled={blocked}>
        {t("submit")}
      </button>
    </form>
  );
}

function Project({ c }: { c: CallEntry }) {
  const dir = str(c.args.project_directory);
  return dir ? (
    <p class="project">
      <span>{t("project")}</span> <code>{dir}</code>
    </p>
  ) : null;
}

function AskCard({ c, answer, draft }: Props) {
  return (
    <>
      <Project c={c} />
      <Markdown text={str(c.args.question)} />
      <Composer
        idPrefix={`ask-${c.call_id}`}
        draft={draft}
        label={t("reply")}
        submitLabel={t("send")}
        multiline
        onSubmit={(text, content) => answer({ result: content.length ? { message: text, content } : { message: text } })}
      />
    </>
  );
}

function ReportCard({ c, answer, draft }: Props) {
  return (
    <>
      <Project c={c} />
      <Markdown text={str(c.args.summary)} />
      <button class="btn primary wide" type="button" onClick={() => answer({ result: ANSWERS.approved() })}>
        ✓ {t("approve")}
      </button>
      <Composer
        idPrefix={`rep-${c.call_id}`}
        draft={draft}
        label={t("feedback")}
        submitLabel={t("requestChanges")}
        multiline
        secondary
        onSubmit={(text, content) => answer({ result: { message: text || t("requestChanges"), approved: false, ...(content.length ? { content } : {}) } })}
      />
    </>
  );
}

type GenericMod = typeof import("./GenericCard.js");
let generic: GenericMod | undefined;

/** A tool without a card of its own: a form from its schema, in a chunk of its own (the initial JavaScript budget);
 * Claude Code's question sets and MCP requests (issue 29: tools/asks.tsx) come with it. */
function GenericLazy(p: Props) {
  const [m, setM] = useState(generic);
  useEffect(() => {
    if (!m) void import("./GenericCard.js").then((x) => setM((generic = x)));
  }, [m]);
  return m ? <m.GenericCard {...p} /> : null;
}

const BODIES: Record<string, (p: Props) => preact.JSX.Element> = {
  choice: ChoiceCard,
  confirm: ConfirmCard,
  input: InputCard,
  ask_question: AskCard,
  work_report: ReportCard,
  permission: PermissionCardLazy /* issue 17: tools/permission.tsx */,
};

/** A pending card's inputs, for a host other than a relay session: IM mode's cards (web/src/im/ImScreen.tsx, issue 31). */
export function CardBody(p: Props) {
  const Body = BODIES[p.c.name] ?? GenericLazy;
  return <Body {...p} />;
}

/** What stands in the way of answering on this device now, said on the card itself. */
function CardNote({ conn, c }: { conn: SessionConn; c: CallEntry }) {
  const k = kindOf(conn);
  // A remote-MCP call's caller is the relay's endpoint, not the agent's socket: "agent offline" is not true of it.
  if (k === "online" || k === "connecting" || (k === "agent-away" && c.via)) return null;
  if (k === "replaced") {
    return (
      <div class="card-note refused" data-note={k} role="note">
        <span>{t("cardReplaced")}</span>
        <button class="btn small" type="button" onClick={() => conn.takeOver()}>
          {t("useHere")}
        </button>
      </div>
    );
  }
  const key = k === "stopped" ? "cardStopped" : k === "agent-away" ? "cardAgentAway" : "cardNotConnected";
  return (
    <p class={`card-note${k === "stopped" ? " refused" : ""}`} data-note={k} role="note">
      {t(key)}
    </p>
  );
}

/** A sealed call that did not open here: what it is and that it cannot be shown — never its ciphertext. */
function UnreadableCard({ c, focused }: { c: CallEntry; focused: boolean }) {
  return (
    <article
      class={`card unreadable${focused ? " focused" : ""}`}
      data-call={c.call_id}
      data-state={c.state}
      data-unreadable=""
      aria-labelledby={`h-${c.call_id}`}
      tabIndex={focused ? -1 : undefined}
    >
      <header>
        <ToolIcon name={c.name} />
        <span id={`h-${c.call_id}`}>{c.name}</span>
        <Lock sealed />
      </header>
      <p class="err" role="note">
        {t("cantOpen")}
      </p>
    </article>
  );
}

export function CallCard({ c, conn, focused = false }: { c: CallEntry; conn: SessionConn; focused?: boolean }) {
  // Answered here: its notification goes at once, not at the inbox's next update.
  const answer = (a: Answer) => conn.answer(c.call_id, a) && closeNotification(conn.sid, c.call_id);
  const done = c.state !== "pending";
  const sealed = conn.sealed.value;
  const refused = conn.refused;
  // Send or a button pressed on the early card before the app started (web/src/early-card.ts): carried out once,
  // when this card shows an open call on a connection that may answer (a refused one keeps it for a takeover).
  useEffect(() => {
    if (done || refused || c.unreadable) return;
    const early = takeEarlyIntent(c.call_id);
    if (early?.kind === "send") {
      if (answer({ result: { message: early.text } })) dropDraft(draftAt(conn.sid, sealed, c.call_id));
    } else if (early) answer({ result: ANSWERS[early.kind]() });
  }, [done, refused]);
  if (c.unreadable) return <UnreadableCard c={c} focused={focused} />;
  if (c.name === "canvas") {
    const id = str(c.result?.instance_id);
    return (
      <article class="card canvas-card" aria-label={t("canvas")}>
        <header>
          <ToolIcon name="canvas" /> {t("canvas")} <code>{id}</code> <Lock sealed={sealed} />
        </header>
        {id ? <Board conn={conn} id={id} /> : c.error ? <p class="err">{c.error.message}</p> : null}
      </article>
    );
  }
  if (done) return <SettledCard c={c} conn={conn} focused={focused} />;
  const Body = BODIES[c.name] ?? GenericLazy;
  const q = headline(c);
  // Replaced by another tab or stopped for good (`refused`): nothing in the card can be used (the note says why).
  return (
    <article
      class={`card pending${focused ? " focused" : ""}`}
      data-call={c.call_id}
      data-state={c.state}
      aria-labelledby={`h-${c.call_id}`}
      tabIndex={focused ? -1 : undefined}
    >
      <header>
        <ToolIcon name={c.name} />
        <span id={`h-${c.call_id}`}>{title(c)}</span>
        <Countdown deadline={c.deadline} />
        <Lock sealed={sealed} />
      </header>
      {q && <p class="question">{q}</p>}
      <CardNote conn={conn} c={c} />
      <fieldset class="card-body" disabled={refused}>
        {/* A body that fails to render still leaves Decline, so the agent is not left waiting. */}
        <ErrorBoundary>
          <Body c={c} answer={answer} draft={draftAt(conn.sid, sealed, c.call_id)} />
        </ErrorBoundary>
        <button class="btn link decline" type="button" onClick={() => answer({ error: { code: "declined", message: "the human declined" } })}>
          {t("decline")}
        </button>
      </fieldset>
    </article>
  );
}

/** Deadlines closer than this count down by the second. */
const SOON_MS = 10 * 60_000;

function Countdown({ deadline }: { deadline: number }) {
  const [now, setNow] = useState(Date.now());
  const left = deadline - now;
  const soon = left <= SOON_MS;
  useEffect(() => {
    if (left <= 0) return;
    // Far away: wake once when the countdown should start; close: every second.
    if (!soon) {
      const id = setTimeout(() => setNow(Date.now()), Math.min(left - SOON_MS + 50, 2 ** 31 - 1));
      return () => clearTimeout(id);
    }
    const id = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(id);
  }, [deadline, soon, left <= 0]);
  if (soon) {
    const s = Math.max(0, Math.ceil(left / 1000));
    const mmss = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
    // role=timer: screen readers do not announce every tick.
    return (
      <small class={`deadline countdown${s <= 60 ? " urgent" : ""}`} role="timer">
        {t("timeLeft", { t: mmss })}
      </small>
    );
  }
  const d = new Date(deadline);
  const same = d.toDateString() === new Date().toDateString();
  const at = same
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  return <small class="deadline">{t("expires", { t: at })}</small>;
}
