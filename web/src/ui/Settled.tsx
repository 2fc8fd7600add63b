// A settled call collapsed to a row (split out of Cards.tsx): what was asked — a permission as a sentence,
// "Bash · rm -rf node_modules" — and how it ended, in words (approved, changes requested and declined each
// look different), and who decided: this device, another tab of it, or another device by name with the
// winning answer ("Yes — answered on iPhone · Safari"), also when this device's own answer lost (issue 28 §4, §5).
import { cut } from "../../../shared/text/cut.js";
import { ANSWERS, permissionLine } from "../../../shared/tools/meaning.js";
import { callText, plainLine } from "../calltext.js";
import type { CallEntry, SessionConn } from "../conn.js";
import { t, type Key } from "../i18n.js";
import { Markdown } from "../tools/markdown.js";
import { pt } from "../tools/permission-i18n.js";
import { Content } from "./Content.js";
import { ErrorBoundary } from "./ErrorBoundary.js";
import { Lock, ToolIcon } from "./Icon.js";

export const str = (v: unknown, d = ""): string => (typeof v === "string" ? v : d);

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

export function title(c: CallEntry): string {
  if (c.name.startsWith("ask_question")) return t("question"); // ask_question, ask_questions
  if (c.name === "elicitation") return str(c.args.server, c.name); // the MCP server that asks
  if (c.name === "work_report") return t("workReport");
  if (c.name === "canvas") return t("canvas");
  if (c.name === "choice" || c.name === "confirm" || c.name === "input" || c.name === "permission") return t(`t_${c.name}`);
  return c.action ? `${c.name} · ${c.action}` : c.name;
}

export function headline(c: CallEntry): string {
  if (c.name === "ask_question" || c.name === "work_report") return "";
  return str(c.args.question);
}

/** A collapsed card's line: what was asked (an ask_question's question too, not just "Question"; a permission as a sentence). */
function summaryLine(c: CallEntry): string {
  if (c.name === "work_report") return plainLine(str(c.args.summary));
  if (c.name === "permission") return cut(permissionLine(c.args), 120);
  // What the call asks: its question (or summary, title, prompt, message; a question set's questions).
  return callText(c);
}

/** How a settled call ended, in words; `kind` gives approved / changes requested / declined their own look. */
export interface Outcome {
  kind: "approved" | "changes" | "declined" | "error" | "yes" | "no" | "allowed" | "denied" | "answer";
  text: string;
}

const GLYPH: Partial<Record<Outcome["kind"], string>> = {
  approved: "✓",
  changes: "✎",
  declined: "✕",
  error: "⚠",
  yes: "✓",
  no: "✕",
  allowed: "✓",
  denied: "✕",
};

export function outcomeOf(c: CallEntry): Outcome | undefined {
  const mineOrQueued = c.state === "answered" || c.state === "queued";
  if (mineOrQueued && c.error)
    return c.error.code === "declined" ? { kind: "declined", text: t("declined") } : { kind: "error", text: `${t("error")}: ${c.error.message}` };
  const r = mineOrQueued ? c.result : undefined;
  // Answered elsewhere, or our answer lost: only the winner's `message` is known (tool.cancel's `answer`).
  const msg = r ? r.message : c.state === "elsewhere" || c.state === "lost" ? c.answerText : undefined;
  if (msg === undefined) return undefined;
  switch (c.name) {
    case "work_report": {
      const approved = r ? r.approved === true : msg === "approved";
      if (approved) return { kind: "approved", text: t("approved") };
      const why = msg && msg !== t("requestChanges") ? `: ${msg}` : "";
      return { kind: "changes", text: `${t("changesRequested")}${why}` };
    }
    case "confirm": {
      const yes = r ? r.confirmed === true : msg === ANSWERS.yes().message;
      return yes ? { kind: "yes", text: str(c.args.yes_label, t("yes")) } : { kind: "no", text: str(c.args.no_label, t("no")) };
    }
    case "permission": {
      const rule = r && typeof r.rule === "string" ? r.rule : undefined;
      if (msg === "always" || rule) return { kind: "allowed", text: rule ? pt("answeredAlways", { rule }) : pt("answeredAllow") };
      if (msg === "session") return { kind: "allowed", text: pt("answeredSession") };
      // Denied: with the message that went to the model, when the human wrote one.
      const told = typeof r?.feedback === "string" && r.feedback ? ` · “${r.feedback}”` : "";
      return msg === "deny" || r?.behavior === "deny" ? { kind: "denied", text: pt("answeredDeny") + told } : { kind: "allowed", text: pt("answeredAllow") };
    }
    default:
      if (msg) return { kind: "answer", text: msg };
      return r?.content?.length ? { kind: "answer", text: t("attachmentsOnly", { n: r.content.length }) } : { kind: "answer", text: t("emptyAnswer") };
  }
}

/** Who decided, in words: another tab of this device, another device by name (ours lost, or we had not answered), or the state. */
function decidedBy(c: CallEntry, conn: SessionConn): string {
  if (c.tab) return t("answeredTab");
  if (c.state !== "elsewhere" && c.state !== "lost") return t(STATE_KEY[c.state]);
  const who = conn.whoAnswered(c);
  if (c.state === "elsewhere") return who ? t("answeredOn", { who }) : t("elsewhere");
  return who ? t("lostTo", { who }) : t("lostRace");
}

export function SettledCard({ c, conn, focused }: { c: CallEntry; conn: SessionConn; focused: boolean }) {
  const o = outcomeOf(c);
  const tone = c.state === "answered" || c.state === "queued" ? (c.error ? "warn" : "ok") : c.state === "lost" || c.state === "elsewhere" ? "info" : "muted";
  const glyph = o && GLYPH[o.kind];
  return (
    <article
      class={`card done ${tone}${focused ? " focused" : ""}`}
      data-call={c.call_id}
      data-state={c.state}
      data-outcome={o?.kind}
      tabIndex={focused ? -1 : undefined}
    >
      <details>
        <summary>
          <ToolIcon name={c.name} />
          <span class="sum">
            <span class="q">{summaryLine(c) || title(c)}</span>
            <span class="ans">
              {o && (
                <span class={`outcome o-${o.kind}`}>
                  {glyph && (
                    <span class="o-ico" aria-hidden="true">
                      {glyph}
                    </span>
                  )}
                  <b>{o.text}</b>
                </span>
              )}
              <small class="state">{decidedBy(c, conn)}</small>
              <Lock sealed={conn.sealed.value} />
            </span>
          </span>
        </summary>
        <div class="body">
          <ErrorBoundary>
            {c.name === "ask_question" && <Markdown text={str(c.args.question)} />}
            {c.name === "work_report" && <Markdown text={str(c.args.summary)} />}
            {c.name !== "ask_question" && c.name !== "work_report" && headline(c) && <p class="question">{headline(c)}</p>}
            {c.result?.content && <Content blocks={c.result.content} />}
          </ErrorBoundary>
        </div>
      </details>
    </article>
  );
}
