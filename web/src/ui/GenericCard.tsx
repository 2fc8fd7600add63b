// The card of a tool without one of its own (an agent's tool, or a built-in one this app has no card for): a
// form from the tool's input schema, or one inferred from the call's arguments. A lazily loaded chunk
// (Cards.tsx GenericLazy), so the schema form is not part of the app's first load; it also holds the cards of
// Claude Code's question sets and MCP requests (tools/asks.tsx, issue 29), which are built on the schema form.
import { BUILTIN_TOOLS } from "../../../shared/contract/builtin-tools.js";
import type { CallEntry } from "../conn.js";
import { t } from "../i18n.js";
import type { Answer } from "../tools/calculator.js";
import { ElicitationCard, QuestionsCard } from "../tools/asks.js";
import { inferSchema, SchemaForm } from "../tools/schema-form.js";

function schemaOf(c: CallEntry): Record<string, unknown> {
  const def = BUILTIN_TOOLS.find((d) => d.name === c.name);
  if (def?.type === "action") return def.inputSchema;
  const act = def ? def.actions.find((a) => a.name === c.action) : undefined;
  return act?.inputSchema ?? inferSchema(c.args);
}

export function GenericCard({ c, answer }: { c: CallEntry; answer: (a: Answer) => void }) {
  if (c.name === "ask_questions") return <QuestionsCard c={c} answer={answer} />;
  if (c.name === "elicitation") return <ElicitationCard c={c} answer={answer} />;
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
