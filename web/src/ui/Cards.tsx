// A pending tool call as a card in the thread; once it is settled it collapses to one line with its answer.
import { useState } from "preact/hooks";
import { BUILTIN_TOOLS } from "../../../shared/builtin-tools.js";
import type { CallEntry, SessionConn } from "../conn.js";
import { t, type Key } from "../i18n.js";
import type { Answer } from "../tools/calculator.js";
import { Markdown } from "../tools/markdown.js";
import { inferSchema, SchemaForm } from "../tools/schema-form.js";
import { Board } from "./Board.js";
import { Composer } from "./Composer.js";
import { Content } from "./Content.js";
import { ErrorBoundary } from "./ErrorBoundary.js";

const str = (v: unknown, d = ""): string => (typeof v === "string" ? v : d);

export const STATE_KEY: Record<CallEntry["state"], Key> = {
  pending: "waitingFor",
  queued: "queued",
  answered: "answeredHere",
  elsewhere: "elsewhere",
  lost: "lostRace",
  timeout: "timeout",
  cancelled: "cancelled",
  gone: "gone",
};

const ICON: Record<string, string> = { choice: "☰", confirm: "✔", input: "✎", ask_question: "?", work_report: "✓", canvas: "✏", calculator: "∑" };

type Props = { c: CallEntry; answer: (a: Answer) => void };

function ChoiceCard({ c, answer }: Props) {
  const options = Array.isArray(c.args.options) ? c.args.options.map((o) => String(o)) : [];
  const [picked, setPicked] = useState<string[]>([]);
  if (c.args.multiple === true) {
    return (
      <form onSubmit={(e) => { e.preventDefault(); if (picked.length) answer({ result: { message: picked.join(", "), selected: picked } }); }}>
        <fieldset class="options">
          <legend class="sr-only">{str(c.args.question)}</legend>
          {options.map((o, i) => (
            <label class="option check" key={i}>
              <input type="checkbox" checked={picked.includes(o)} onChange={(e) => setPicked((e.target as HTMLInputElement).checked ? [...picked, o] : picked.filter((x) => x !== o))} />
              {o}
            </label>
          ))}
        </fieldset>
        <button class="btn primary" type="submit" disabled={!picked.length}>{t("submit")}</button>
      </form>
    );
  }
  return (
    <div class="options" role="group" aria-label={str(c.args.question)}>
      {options.map((o, i) => (
        <button key={i} class="btn option" type="button" onClick={() => answer({ result: { message: o, selected: [o] } })}>{o}</button>
      ))}
    </div>
  );
}

function ConfirmCard({ c, answer }: Props) {
  return (
    <div class="options two" role="group" aria-label={str(c.args.question)}>
      <button class="btn primary" type="button" onClick={() => answer({ result: { message: "yes", confirmed: true } })}>{str(c.args.yes_label, t("yes"))}</button>
      <button class="btn" type="button" onClick={() => answer({ result: { message: "no", confirmed: false } })}>{str(c.args.no_label, t("no"))}</button>
    </div>
  );
}

function InputCard({ c, answer }: Props) {
  const [v, setV] = useState(str(c.args.default));
  const id = `in-${c.call_id}`;
  const multi = c.args.multiline === true;
  const submit = (e: Event) => { e.preventDefault(); answer({ result: { message: v } }); };
  return (
    <form class="input-card" onSubmit={submit}>
      <label class="sr-only" for={id}>{str(c.args.question)}</label>
      {multi ? (
        <textarea id={id} rows={4} placeholder={str(c.args.placeholder)} value={v} onInput={(e) => setV((e.target as HTMLTextAreaElement).value)} />
      ) : (
        <input id={id} type="text" placeholder={str(c.args.placeholder)} value={v} onInput={(e) => setV((e.target as HTMLInputElement).value)} />
      )}
      <button class="btn primary" type="submit">{t("submit")}</button>
    </form>
  );
}

function Project({ c }: { c: CallEntry }) {
  const dir = str(c.args.project_directory);
  return dir ? <p class="project"><span>{t("project")}</span> <code>{dir}</code></p> : null;
}

function AskCard({ c, answer }: Props) {
  return (
    <>
      <Project c={c} />
      <Markdown text={str(c.args.question)} />
      <Composer
        idPrefix={`ask-${c.call_id}`}
        label={t("reply")}
        submitLabel={t("send")}
        multiline
        onSubmit={(text, content) => answer({ result: content.length ? { message: text, content } : { message: text } })}
      />
    </>
  );
}

function ReportCard({ c, answer }: Props) {
  return (
    <>
      <Project c={c} />
      <Markdown text={str(c.args.summary)} />
      <button class="btn primary wide" type="button" onClick={() => answer({ result: { message: "approved", approved: true } })}>✓ {t("approve")}</button>
      <Composer
        idPrefix={`rep-${c.call_id}`}
        label={t("feedback")}
        submitLabel={t("requestChanges")}
        multiline
        secondary
        onSubmit={(text, content) => answer({ result: { message: text || t("requestChanges"), approved: false, ...(content.length ? { content } : {}) } })}
      />
    </>
  );
}

function schemaOf(c: CallEntry): Record<string, unknown> {
  const def = BUILTIN_TOOLS.find((d) => d.name === c.name);
  if (def?.type === "action") return def.inputSchema;
  const act = def ? def.actions.find((a) => a.name === c.action) : undefined;
  return act?.inputSchema ?? inferSchema(c.args);
}

function GenericCard({ c, answer }: Props) {
  return (
    <SchemaForm
      schema={schemaOf(c)}
      initial={c.args}
      idPrefix={`gen-${c.call_id}`}
      submitLabel={t("submit")}
      onSubmit={(values) => answer({ result: { message: JSON.stringify(values), values } })}
    />
  );
}

const BODIES: Record<string, (p: Props) => preact.JSX.Element> = { choice: ChoiceCard, confirm: ConfirmCard, input: InputCard, ask_question: AskCard, work_report: ReportCard };

function title(c: CallEntry): string {
  if (c.name === "ask_question") return t("question");
  if (c.name === "work_report") return t("workReport");
  if (c.name === "canvas") return t("canvas");
  if (c.name === "choice" || c.name === "confirm" || c.name === "input") return t(`t_${c.name}`);
  return c.action && c.name !== "choice" ? `${c.name} · ${c.action}` : c.name;
}

function headline(c: CallEntry): string {
  if (c.name === "ask_question" || c.name === "work_report") return "";
  return str(c.args.question);
}

export function CallCard({ c, conn }: { c: CallEntry; conn: SessionConn }) {
  const answer = (a: Answer) => conn.answer(c.call_id, a);
  const done = c.state !== "pending";
  if (c.name === "canvas") {
    const id = str(c.result?.instance_id);
    return (
      <article class="card canvas-card" aria-label={t("canvas")}>
        <header><span class="ico" aria-hidden="true">{ICON.canvas}</span> {t("canvas")} <code>{id}</code></header>
        {id ? <Board conn={conn} id={id} /> : c.error ? <p class="err">{c.error.message}</p> : null}
      </article>
    );
  }
  if (done) {
    const tone = c.state === "answered" || c.state === "queued" ? (c.error ? "warn" : "ok") : c.state === "lost" || c.state === "elsewhere" ? "info" : "muted";
    const answerText = c.error ? (c.error.code === "declined" ? t("declined") : `${t("error")}: ${c.error.message}`) : c.result?.message;
    return (
      <article class={`card done ${tone}`} data-call={c.call_id} data-state={c.state}>
        <details>
          <summary>
            <span class="ico" aria-hidden="true">{ICON[c.name] ?? "⚙"}</span>
            <span class="q">{headline(c) || title(c)}</span>
            <span class="ans">
              {(c.state === "answered" || c.state === "queued") && answerText ? <b>{answerText}</b> : null}
              <small class="state">{t(STATE_KEY[c.state])}</small>
            </span>
          </summary>
          <div class="body">
            <ErrorBoundary>
              {c.name === "ask_question" && <Markdown text={str(c.args.question)} />}
              {c.name === "work_report" && <Markdown text={str(c.args.summary)} />}
              {c.result?.content && <Content blocks={c.result.content} />}
            </ErrorBoundary>
          </div>
        </details>
      </article>
    );
  }
  const Body = BODIES[c.name] ?? GenericCard;
  const q = headline(c);
  return (
    <article class="card pending" data-call={c.call_id} data-state={c.state} aria-labelledby={`h-${c.call_id}`}>
      <header>
        <span class="ico" aria-hidden="true">{ICON[c.name] ?? "⚙"}</span>
        <span id={`h-${c.call_id}`}>{title(c)}</span>
        <Countdown deadline={c.deadline} />
      </header>
      {q && <p class="question">{q}</p>}
      {/* A body that fails to render still leaves Decline, so the agent is not left waiting. */}
      <ErrorBoundary>
        <Body c={c} answer={answer} />
      </ErrorBoundary>
      <button class="btn link decline" type="button" onClick={() => answer({ error: { code: "declined", message: "the human declined" } })}>{t("decline")}</button>
    </article>
  );
}

function Countdown({ deadline }: { deadline: number }) {
  const d = new Date(deadline);
  const same = d.toDateString() === new Date().toDateString();
  const s = same ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  return <small class="deadline">{t("expires", { t: s })}</small>;
}
