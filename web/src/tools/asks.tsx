// The cards of Claude Code's own questions (issue 29, docs/pwa.md "Questions and MCP requests"), in the lazily
// loaded chunk of ui/GenericCard.tsx (styles: the end of styles.css): `ask_questions` — AskUserQuestion's whole set on one card, each question's
// header and text, its options with their descriptions, single or multi-select, and a typed "Other" answer —
// and `elicitation` — an MCP server's form (the schema form) or a URL shown in full with its domain, opened
// only by a tap, then Done / Decline.
import { useState } from "preact/hooks";
import { asArgs } from "../../../shared/tools/meaning.js";
import type { CallEntry } from "../conn.js";
import { lang } from "../i18n.js";
import type { Answer } from "./calculator.js";
import { Markdown } from "./markdown.js";
import { SchemaForm } from "./schema-form.js";

const en = {
  other: "Other",
  otherLabel: "Your own answer to “{q}”",
  multiHint: "Choose one or more",
  send: "Send answers",
  unanswered: "Answer every question ({n} left)",
  project: "Project",
  asks: "{server} (an MCP server of {agent}) asks:",
  accept: "Send",
  cancel: "Cancel",
  urlIntro: "It asks you to open this page:",
  domain: "Domain",
  open: "Open the page",
  urlDone: "Done",
  urlDecline: "Decline",
  urlNote: "Opened only when you tap the button. Enter passwords or payment details only if you trust this domain.",
};
const zh: typeof en = {
  other: "其他",
  otherLabel: "你对“{q}”的回答",
  multiHint: "可选一个或多个",
  send: "发送回答",
  unanswered: "请回答所有问题(还剩 {n} 个)",
  project: "项目",
  asks: "{server}({agent} 的 MCP 服务器)请求:",
  accept: "发送",
  cancel: "取消",
  urlIntro: "它请你打开这个页面:",
  domain: "域名",
  open: "打开页面",
  urlDone: "完成",
  urlDecline: "拒绝",
  urlNote: "只有点按钮才会打开。只在信任这个域名时输入密码或付款信息。",
};
const at = (key: keyof typeof en, vars: Record<string, string | number> = {}) =>
  (lang.value === "zh" ? zh : en)[key].replace(/\{(\w+)\}/g, (_, k: string) => String(vars[k] ?? ""));

const str = (v: unknown): string => (typeof v === "string" ? v : "");

type Props = { c: CallEntry; answer: (a: Answer) => void };

function Project({ c }: { c: CallEntry }) {
  const dir = str(c.args.project_directory);
  return dir ? (
    <p class="project">
      <span>{at("project")}</span> <code>{dir}</code>
    </p>
  ) : null;
}

interface Q {
  question: string;
  header: string;
  multi: boolean;
  options: { label: string; description: string }[];
}

const questionsOf = (args: Record<string, unknown>): Q[] =>
  (Array.isArray(args.questions) ? args.questions : []).map((x) => {
    const q = asArgs(x);
    return {
      question: str(q.question),
      header: str(q.header),
      multi: q.multiSelect === true,
      options: (Array.isArray(q.options) ? q.options : []).map((o) => ({ label: str(asArgs(o).label), description: str(asArgs(o).description) })),
    };
  });

/** One question's state: the marked options (indices: two labels may read the same) and the "Other" text. */
interface Pick {
  on: number[];
  other: boolean;
  text: string;
}

/** The answer to one question as Claude Code takes it: a label, labels joined by ", ", or the typed text. */
function answerOf(q: Q, p: Pick): string {
  const typed = p.other ? p.text.trim() : "";
  const labels = p.on.map((i) => q.options[i]!.label);
  if (!q.multi) return typed || labels[0] || "";
  return [...labels, ...(typed ? [typed] : [])].join(", ");
}

export function QuestionsCard({ c, answer }: Props) {
  const qs = questionsOf(c.args);
  const [picks, setPicks] = useState<Pick[]>(() => qs.map(() => ({ on: [], other: false, text: "" })));
  const set = (i: number, p: Partial<Pick>) => setPicks(picks.map((x, k) => (k === i ? { ...x, ...p } : x)));
  const left = qs.filter((q, i) => answerOf(q, picks[i]!) === "").length;
  const submit = (e: Event) => {
    e.preventDefault();
    if (left > 0) return;
    const answers: Record<string, string> = {};
    qs.forEach((q, i) => (answers[q.question] = answerOf(q, picks[i]!)));
    answer({ result: { message: qs.map((q) => `${q.header || q.question}: ${answers[q.question]}`).join("\n"), answers } });
  };
  return (
    <form class="asks" onSubmit={submit}>
      <Project c={c} />
      {qs.map((q, i) => {
        const p = picks[i]!;
        const name = `aq-${c.call_id}-${i}`;
        const mark = (k: number, on: boolean) =>
          set(i, q.multi ? { on: on ? [...p.on, k].sort((a, b) => a - b) : p.on.filter((x) => x !== k) } : { on: [k], other: false });
        return (
          <fieldset class="options ask-q" key={i} data-question={i}>
            <legend>
              {q.header && <span class="chip">{q.header}</span>}
              <span class="sr-only">{q.question}</span>
            </legend>
            <Markdown text={q.question} />
            {q.multi && <p class="hint">{at("multiHint")}</p>}
            {q.options.map((o, k) => (
              <label class={`option ${q.multi ? "check" : "radio"}${p.on.includes(k) ? " on" : ""}`} key={k}>
                <input
                  type={q.multi ? "checkbox" : "radio"}
                  name={name}
                  checked={p.on.includes(k)}
                  onChange={(e) => mark(k, (e.target as HTMLInputElement).checked)}
                />
                <span class="opt-text">
                  <span class="opt-label">{o.label}</span>
                  {o.description && <small class="opt-desc">{o.description}</small>}
                </span>
              </label>
            ))}
            <label class={`option ${q.multi ? "check" : "radio"}${p.other ? " on" : ""}`}>
              <input
                type={q.multi ? "checkbox" : "radio"}
                name={name}
                checked={p.other}
                onChange={(e) => {
                  const on = (e.target as HTMLInputElement).checked;
                  set(i, q.multi ? { other: on } : { other: on, on: [] });
                }}
              />
              <span class="opt-text">{at("other")}</span>
            </label>
            <input
              class="ask-other"
              type="text"
              aria-label={at("otherLabel", { q: q.question })}
              value={p.text}
              onInput={(e) => {
                const text = (e.target as HTMLInputElement).value;
                // Typing is choosing "Other" (in a single-select question, instead of an option).
                set(i, q.multi ? { text, other: text.trim() !== "" || p.other } : { text, other: true, on: [] });
              }}
            />
          </fieldset>
        );
      })}
      {left > 0 && <p class="hint">{at("unanswered", { n: left })}</p>}
      <button class="btn primary" type="submit" disabled={left > 0}>
        {at("send")}
      </button>
    </form>
  );
}

const ended = (action: "accept" | "decline" | "cancel", values?: Record<string, unknown>): Answer => ({
  result: { message: action === "accept" ? "accepted" : action === "decline" ? "declined" : "cancelled", action, ...(values ? { values } : {}) },
});

/** An http(s) URL, or nothing: any other scheme is never offered as a link. */
function httpUrl(v: string): URL | undefined {
  try {
    const u = new URL(v);
    return u.protocol === "https:" || u.protocol === "http:" ? u : undefined;
  } catch {
    return undefined;
  }
}

export function ElicitationCard({ c, answer }: Props) {
  const schema = asArgs(c.args.requested_schema);
  const url = c.args.mode === "url" ? httpUrl(str(c.args.url)) : undefined;
  return (
    <div class="elicit">
      <Project c={c} />
      <p class="elicit-who">{at("asks", { server: str(c.args.server) || "MCP", agent: str(c.args.agent) || "the agent" })}</p>
      <Markdown text={str(c.args.message)} />
      {c.args.mode === "url" ? (
        url ? (
          <>
            <p>{at("urlIntro")}</p>
            <p class="elicit-domain">
              <span>{at("domain")}</span> <b>{url.host}</b>
            </p>
            <p class="elicit-url">
              <code>{url.href}</code>
            </p>
            <p class="hint">{at("urlNote")}</p>
            <a class="btn wide" href={url.href} target="_blank" rel="noopener noreferrer">
              {at("open")}
            </a>
            <div class="options two" role="group">
              <button class="btn primary" type="button" onClick={() => answer(ended("accept"))}>
                {at("urlDone")}
              </button>
              <button class="btn" type="button" onClick={() => answer(ended("decline"))}>
                {at("urlDecline")}
              </button>
            </div>
          </>
        ) : null
      ) : (
        <>
          <SchemaForm
            schema={schema}
            initial={{}}
            idPrefix={`el-${c.call_id}`}
            submitLabel={at("accept")}
            onSubmit={(values) => answer(ended("accept", values))}
          />
          <button class="btn" type="button" onClick={() => answer(ended("cancel"))}>
            {at("cancel")}
          </button>
        </>
      )}
    </div>
  );
}
