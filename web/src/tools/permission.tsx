// The `permission` card: an agent asks to run one of its own tools (../shared/spec/builtin-tools.md).
// Shows who asks and where, the input for what it is (a command in monospace, a file, an edit as a diff),
// and answers Allow / Deny (with an optional message for the model) / Always allow (a rule from the
// request's `suggestions`, else one the policy engine proposes, or one the human types). Loaded lazily
// (permission-lazy.tsx): the policy engine it uses is not part of the app's first load.
import { useMemo, useState } from "preact/hooks";
import type { CallEntry } from "../conn.js";
import type { Answer } from "./calculator.js";
import { pt } from "./permission-i18n.js";
import { ANSWERS } from "../../../shared/tools/meaning.js";
import { permissionChoices } from "../../../shared/tools/choices.js";
import { ChoiceButtons } from "./permission-choices.js";
import { codeSpans, lineDiff, ruleError, rulesToOffer, viewOf, withContext, type DiffLine, type InputView } from "./permission-view.js";
import "./permission.css";

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const MAX_LINES = 400;

export interface PermissionProps {
  c: CallEntry;
  answer: (a: Answer) => void;
}

function Lines({ text, cls }: { text: string; cls: string }) {
  const lines = text.split("\n");
  const shown = lines.slice(0, MAX_LINES).join("\n");
  return (
    <>
      <pre class={cls}>
        <code>{shown}</code>
      </pre>
      {lines.length > MAX_LINES && <p class="hint">{pt("truncated", { n: lines.length - MAX_LINES })}</p>}
    </>
  );
}

function Diff({ old, next }: { old: string; next: string }) {
  const lines = useMemo(() => withContext(lineDiff(old, next)), [old, next]);
  const cut = lines.slice(0, MAX_LINES);
  return (
    <>
      <pre class="perm-diff" role="group" aria-label="diff">
        {cut.map((l: DiffLine | undefined, i) => {
          if (l === undefined)
            return (
              <span key={i} class="ctx gap">
                {"…\n"}
              </span>
            );
          return (
            <span key={i} class={l.op === "-" ? "del" : l.op === "+" ? "add" : "ctx"}>
              <span class="sign" aria-hidden="true">
                {l.op === " " ? " " : l.op}
              </span>
              <span class="sr-only">{l.op === "-" ? "removed: " : l.op === "+" ? "added: " : ""}</span>
              {`${l.text}\n`}
            </span>
          );
        })}
      </pre>
      {lines.length > MAX_LINES && <p class="hint">{pt("truncated", { n: lines.length - MAX_LINES })}</p>}
    </>
  );
}

function Field({ label, children }: { label: string; children: preact.ComponentChildren }) {
  return (
    <div class="perm-field">
      <span class="perm-label">{label}</span>
      {children}
    </div>
  );
}

function InputBody({ v }: { v: InputView }) {
  switch (v.kind) {
    case "bash":
      return (
        <Field label={pt("command")}>
          <Lines text={v.command} cls="perm-cmd" />
          {v.description && <p class="hint perm-desc">{v.description}</p>}
        </Field>
      );
    case "edit":
      return (
        <>
          <Field label={pt("file")}>
            <code class="perm-path">{v.path}</code>
          </Field>
          {v.edits.length > 1 && <p class="hint">{pt("edits", { n: v.edits.length })}</p>}
          {v.edits.slice(0, 20).map((e, i) => (
            <Diff key={i} old={e.old} next={e.new} />
          ))}
        </>
      );
    case "write":
      return (
        <>
          <Field label={pt("file")}>
            <code class="perm-path">{v.path}</code>
          </Field>
          <Diff old="" next={v.content} />
        </>
      );
    case "path":
      return (
        <>
          <Field label={pt("path")}>
            <code class="perm-path">{v.path}</code>
          </Field>
          {v.pattern !== undefined && (
            <Field label={pt("pattern")}>
              <code class="perm-path">{v.pattern}</code>
            </Field>
          )}
        </>
      );
    case "url":
      return (
        <>
          <Field label={pt("url")}>
            <code class="perm-path">{v.url}</code>
          </Field>
          {v.prompt && <p class="hint perm-desc">{v.prompt}</p>}
        </>
      );
    case "json":
      return (
        <Field label={pt("input")}>
          <Lines text={v.json} cls="perm-json" />
        </Field>
      );
  }
}

export function PermissionCard({ c, answer }: PermissionProps) {
  const args = c.args;
  const tool = str(args.tool_name) ?? "?";
  const input = (args.input && typeof args.input === "object" && !Array.isArray(args.input) ? args.input : {}) as Record<string, unknown>;
  const view = useMemo(() => viewOf(tool, input), [c.call_id]);
  const rules = useMemo(() => rulesToOffer(args), [c.call_id]);
  const choices = useMemo(() => permissionChoices(args.choices), [c.call_id]);
  const id = `perm-${c.call_id}`;

  return (
    <div class="perm">
      <p class="perm-who">
        {pt("wants", { agent: str(args.agent) ?? pt("anAgent"), tool: "" })}
        <code class="perm-tool">{tool}</code>
      </p>
      {str(args.project_directory) && (
        <p class="project">
          <span>{pt("project")}</span> <code>{str(args.project_directory)}</code>
        </p>
      )}
      <InputBody v={view} />
      {str(args.reason) && (
        <p class="hint perm-reason">
          <span class="sr-only">{pt("why")}: </span>
          {codeSpans(str(args.reason)!).map((p, i) => (p.code ? <code key={i}>{p.text}</code> : p.text))}
        </p>
      )}

      {choices ? <ChoiceButtons choices={choices} answer={answer} id={id} /> : <ClaudeAnswers {...{ args, tool, id, rules, answer }} />}
    </div>
  );
}

/** Claude Code's answers: Allow / Deny (with a message) / Always allow a rule. */
function ClaudeAnswers({
  args,
  tool,
  id,
  rules,
  answer,
}: {
  args: Record<string, unknown>;
  tool: string;
  id: string;
  rules: string[];
  answer: (a: Answer) => void;
}) {
  const [feedback, setFeedback] = useState("");
  const [picked, setPicked] = useState<string>(rules[0] ?? "__other");
  const [other, setOther] = useState("");
  const chosen = picked === "__other" ? other.trim() : picked;
  const otherError = picked === "__other" && other.trim() !== "" ? ruleError(other.trim()) : undefined;
  const canAlways = chosen !== "" && otherError === undefined && ruleError(chosen) === undefined;

  const allow = () => answer({ result: ANSWERS.allow() });
  const deny = () => answer({ result: { ...ANSWERS.deny(), ...(feedback.trim() ? { feedback: feedback.trim() } : {}) } });
  const always = () => canAlways && answer({ result: { message: "always", behavior: "allow", rule: chosen } });
  return (
    <>
      <div class="options two perm-main" role="group" aria-label={pt("wants", { agent: str(args.agent) ?? pt("anAgent"), tool })}>
        <button class="btn primary perm-allow" type="button" onClick={allow}>
          {pt("allow")}
        </button>
        <button class="btn perm-deny" type="button" onClick={deny}>
          {pt("deny")}
        </button>
      </div>
      <div class="field perm-feedback">
        <label for={`${id}-fb`}>{pt("denyMessage")}</label>
        <textarea
          id={`${id}-fb`}
          rows={2}
          value={feedback}
          placeholder={pt("denyMessageHint")}
          onInput={(e) => setFeedback((e.target as HTMLTextAreaElement).value)}
        />
      </div>

      <fieldset class="perm-always">
        <legend>{pt("always")}</legend>
        <p class="hint">{rules.length ? pt("alwaysHelp") : pt("noRule")}</p>
        {rules.map((r) => (
          <label class="option check perm-rule" key={r}>
            <input type="radio" name={`${id}-rule`} value={r} checked={picked === r} onChange={() => setPicked(r)} />
            <code>{r}</code>
          </label>
        ))}
        <label class="option check perm-rule">
          <input type="radio" name={`${id}-rule`} value="__other" checked={picked === "__other"} onChange={() => setPicked("__other")} />
          <span>{pt("otherRule")}</span>
        </label>
        {picked === "__other" && (
          <div class="field">
            <label class="sr-only" for={`${id}-other`}>
              {pt("otherRule")}
            </label>
            <input
              id={`${id}-other`}
              type="text"
              autoComplete="off"
              spellcheck={false}
              placeholder={pt("otherRulePlaceholder")}
              value={other}
              onInput={(e) => setOther((e.target as HTMLInputElement).value)}
            />
            {otherError && (
              <p class="err" role="alert">
                {pt("invalidRule", { e: otherError })}
              </p>
            )}
          </div>
        )}
        <button class="btn wide perm-always-btn" type="button" disabled={!canAlways} onClick={always}>
          <span>
            {pt("always")}
            {canAlways ? (
              <>
                : <code>{chosen}</code>
              </>
            ) : null}
          </span>
        </button>
      </fieldset>
    </>
  );
}
