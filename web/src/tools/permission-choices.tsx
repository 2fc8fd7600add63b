// i34-hermes: the answers of a `permission` call that names the choices its caller accepts (`choices`, e.g.
// Hermes' allowed_choices; docs/permissions.md §14): exactly those buttons, in the order once, session,
// always, deny — no rule picker (the caller keeps its own allowlist). Part of the lazy permission chunk.
import { useState } from "preact/hooks";
import type { Answer } from "./calculator.js";
import { lang } from "../i18n.js";
import { choiceResult, type PermissionChoice } from "../../../shared/tools/choices.js";

const en: Record<PermissionChoice | "denyMessage", string> = {
  once: "Allow once",
  session: "Allow this session",
  always: "Always allow",
  deny: "Deny",
  denyMessage: "Message to the agent (optional)",
};
const zh: typeof en = {
  once: "允许一次",
  session: "本会话内允许",
  always: "始终允许",
  deny: "拒绝",
  denyMessage: "给 Agent 的留言（可选）",
};

export function ChoiceButtons({ choices, answer, id }: { choices: PermissionChoice[]; answer: (a: Answer) => void; id: string }) {
  const t = lang.value === "zh" ? zh : en;
  const [feedback, setFeedback] = useState("");
  const pick = (c: PermissionChoice) => {
    const fb = feedback.trim();
    answer({ result: c === "deny" && fb ? { ...choiceResult(c), feedback: fb } : choiceResult(c) });
  };
  return (
    <>
      <div class="options perm-main perm-choices" role="group">
        {choices.map((c) => (
          <button key={c} class={`btn perm-choice perm-${c}${c === "once" ? " primary" : ""}`} type="button" onClick={() => pick(c)}>
            {t[c]}
          </button>
        ))}
      </div>
      {choices.includes("deny") && (
        <div class="field perm-feedback">
          <label for={`${id}-fb`}>{t.denyMessage}</label>
          <textarea id={`${id}-fb`} rows={2} value={feedback} onInput={(e) => setFeedback((e.target as HTMLTextAreaElement).value)} />
        </div>
      )}
    </>
  );
}
