// A form generated from a JSON Schema object (the MCP inputSchema dialect): strings (with their format),
// numbers, integers, booleans, enums (titled through oneOf/anyOf `const`+`title` or `enumNames`), multi-select
// enums (an array of them: checkboxes) and string arrays get native controls; anything else a JSON text box.
// Used for tools this app has no dedicated card for and for MCP elicitations (the flat schemas of MCP's
// elicitation/create: https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation).
import { useState } from "preact/hooks";
import { t } from "../i18n.js";

type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  items?: Schema;
  description?: string;
  title?: string;
  default?: unknown;
  format?: string;
  const?: unknown;
  oneOf?: Schema[];
  anyOf?: Schema[];
  enumNames?: string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
};

/** An enum's choices with their titles: `enum` (+ legacy `enumNames`) or `oneOf`/`anyOf` of `{const, title}`. */
function choicesOf(s: Schema | undefined): { value: unknown; title: string }[] | undefined {
  if (!s) return undefined;
  if (Array.isArray(s.enum)) return s.enum.map((v, i) => ({ value: v, title: s.enumNames?.[i] ?? String(v) }));
  const alts = s.oneOf ?? s.anyOf;
  if (Array.isArray(alts) && alts.length > 0 && alts.every((a) => a && "const" in a))
    return alts.map((a) => ({ value: a.const, title: a.title ?? String(a.const) }));
  return undefined;
}

/** An `<input type>` for a string's format (the browser's own pickers and keyboards). */
const inputType = (f: string | undefined): "email" | "url" | "date" | "text" =>
  f === "email" ? "email" : f === "uri" ? "url" : f === "date" ? "date" : "text";

/** A schema for arguments that came without one: one field per value, typed by the value. */
export function inferSchema(args: Record<string, unknown>): Schema {
  const properties: Record<string, Schema> = {};
  for (const [k, v] of Object.entries(args)) {
    properties[k] = typeof v === "string" ? { type: "string" } : typeof v === "number" ? { type: "number" } : typeof v === "boolean" ? { type: "boolean" } : {};
  }
  return { type: "object", properties };
}

const kind = (s: Schema): string => {
  const ty = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  if (choicesOf(s)) return "enum";
  if (ty === "array" && choicesOf(s.items)) return "multi";
  if (ty === "array" && s.items && (s.items.type === "string" || s.items.type === undefined)) return "strings";
  if (ty === "object" || ty === "array" || ty === undefined) return "json";
  return ty;
};

export function SchemaForm(p: {
  schema: Record<string, unknown>;
  initial: Record<string, unknown>;
  idPrefix: string;
  submitLabel: string;
  onSubmit: (values: Record<string, unknown>) => void;
}) {
  const schema = p.schema as Schema;
  const props = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const [vals, setVals] = useState<Record<string, string | boolean | number[]>>(() => {
    const o: Record<string, string | boolean | number[]> = {};
    for (const [k, s] of props) {
      const v = p.initial[k] ?? s.default;
      const kd = kind(s);
      const cs = kd === "enum" ? choicesOf(s) : kd === "multi" ? choicesOf(s.items) : undefined;
      o[k] =
        kd === "multi"
          ? (cs ?? []).flatMap((c, i) => (Array.isArray(v) && v.includes(c.value) ? [i] : []))
          : kd === "enum"
            ? String(
                Math.max(
                  -1,
                  (cs ?? []).findIndex((c) => c.value === v),
                ),
              )
            : kd === "boolean"
              ? v === true
              : kd === "strings" && Array.isArray(v)
                ? v.join("\n")
                : v === undefined
                  ? ""
                  : typeof v === "string"
                    ? v
                    : kd === "json"
                      ? JSON.stringify(v, null, 2)
                      : String(v);
    }
    return o;
  });
  const [err, setErr] = useState("");

  const submit = (e: Event) => {
    e.preventDefault();
    const out: Record<string, unknown> = {};
    for (const [k, s] of props) {
      const v = vals[k];
      const kd = kind(s);
      if (kd === "boolean") out[k] = v === true;
      else if (kd === "multi") {
        const cs = choicesOf(s.items) ?? [];
        const picked = Array.isArray(v) ? v.map((i) => cs[i]!.value) : [];
        if (picked.length > 0 || required.has(k)) out[k] = picked;
      } else if (kd === "enum") {
        const c = choicesOf(s)?.[Number(v)];
        if (c) out[k] = c.value;
        else if (required.has(k)) {
          setErr(`${s.title ?? k}: ${t("required")}`);
          return;
        }
      } else if (typeof v === "string" && v !== "") {
        if (kd === "number" || kd === "integer") out[k] = Number(v);
        else if (kd === "strings")
          out[k] = v
            .split("\n")
            .map((x) => x.trim())
            .filter(Boolean);
        else if (kd === "json") {
          try {
            out[k] = JSON.parse(v);
          } catch {
            setErr(`${k}: ${t("invalidJson")}`);
            return;
          }
        } else out[k] = v;
      } else if (required.has(k)) {
        setErr(`${k}: ${t("required")}`);
        return;
      }
    }
    setErr("");
    p.onSubmit(out);
  };

  return (
    <form class="schema-form" onSubmit={submit}>
      {props.map(([k, s]) => {
        const id = `${p.idPrefix}-${k}`;
        const kd = kind(s);
        const set = (v: string | boolean | number[]) => setVals({ ...vals, [k]: v });
        const label = (
          <label for={id}>
            {s.title ?? k}
            {required.has(k) && <span aria-label={t("required")}> *</span>}
            {s.description && <small> — {s.description}</small>}
          </label>
        );
        if (kd === "boolean") {
          return (
            <div class="field check" key={k}>
              <input id={id} type="checkbox" checked={vals[k] === true} onChange={(e) => set((e.target as HTMLInputElement).checked)} />
              {label}
            </div>
          );
        }
        if (kd === "multi") {
          const on = Array.isArray(vals[k]) ? (vals[k] as number[]) : [];
          return (
            <fieldset class="field multi" key={k} id={id}>
              <legend>
                {s.title ?? k}
                {required.has(k) && <span aria-label={t("required")}> *</span>}
                {s.description && <small> — {s.description}</small>}
              </legend>
              {(choicesOf(s.items) ?? []).map((c, i) => (
                <label class={`option check${on.includes(i) ? " on" : ""}`} key={i}>
                  <input
                    type="checkbox"
                    checked={on.includes(i)}
                    onChange={(e) => set((e.target as HTMLInputElement).checked ? [...on, i].sort((a, b) => a - b) : on.filter((x) => x !== i))}
                  />
                  <span class="opt-text">{c.title}</span>
                </label>
              ))}
            </fieldset>
          );
        }
        return (
          <div class="field" key={k}>
            {label}
            {kd === "enum" ? (
              <select id={id} value={String(vals[k])} onChange={(e) => set((e.target as HTMLSelectElement).value)}>
                <option value="-1" />
                {(choicesOf(s) ?? []).map((c, i) => (
                  <option key={i} value={String(i)}>
                    {c.title}
                  </option>
                ))}
              </select>
            ) : kd === "strings" || kd === "json" ? (
              <textarea id={id} rows={3} value={String(vals[k])} onInput={(e) => set((e.target as HTMLTextAreaElement).value)} />
            ) : kd === "number" || kd === "integer" ? (
              <input
                id={id}
                type="number"
                step={kd === "integer" ? 1 : "any"}
                {...(s.minimum !== undefined ? { min: s.minimum } : {})}
                {...(s.maximum !== undefined ? { max: s.maximum } : {})}
                value={String(vals[k])}
                onInput={(e) => set((e.target as HTMLInputElement).value)}
              />
            ) : (
              <input
                id={id}
                // Preact types each input type's attributes apart; these four take the same ones here.
                type={inputType(s.format) as "text"}
                value={String(vals[k])}
                {...(s.maxLength !== undefined ? { maxLength: s.maxLength } : {})}
                onInput={(e) => set((e.target as HTMLInputElement).value)}
              />
            )}
          </div>
        );
      })}
      {err && (
        <p class="err" role="alert">
          {err}
        </p>
      )}
      <button class="btn primary" type="submit">
        {p.submitLabel}
      </button>
    </form>
  );
}
