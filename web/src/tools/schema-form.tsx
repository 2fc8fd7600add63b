// A form generated from a JSON Schema object (the MCP inputSchema dialect): strings, numbers, integers,
// booleans, enums and string arrays get native controls; anything else a JSON text box. Used for tools
// this app has no dedicated card for.
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
};

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
  if (s.enum) return "enum";
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
  const [vals, setVals] = useState<Record<string, string | boolean>>(() => {
    const o: Record<string, string | boolean> = {};
    for (const [k, s] of props) {
      const v = p.initial[k] ?? s.default;
      const kd = kind(s);
      o[k] =
        kd === "boolean"
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
      else if (typeof v === "string" && v !== "") {
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
        const set = (v: string | boolean) => setVals({ ...vals, [k]: v });
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
        return (
          <div class="field" key={k}>
            {label}
            {kd === "enum" ? (
              <select id={id} value={String(vals[k])} onChange={(e) => set((e.target as HTMLSelectElement).value)}>
                <option value="" />
                {(s.enum ?? []).map((o) => (
                  <option key={String(o)} value={String(o)}>
                    {String(o)}
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
                value={String(vals[k])}
                onInput={(e) => set((e.target as HTMLInputElement).value)}
              />
            ) : (
              <input id={id} type="text" value={String(vals[k])} onInput={(e) => set((e.target as HTMLInputElement).value)} />
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
