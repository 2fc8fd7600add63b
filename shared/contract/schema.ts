// JSON Schema validation of call arguments. Workers forbid code generation (no `new Function`), so
// compiled validators such as ajv cannot run there; @cfworker/json-schema interprets the schema instead.
import { Validator, type Schema } from "@cfworker/json-schema";

const cache = new Map<string, Validator>();
// Registrations are parsed once per wake (worker/sql-store.ts), so one schema object serves many calls:
// finding its validator by identity skips the JSON.stringify of the cache key.
const byObject = new WeakMap<object, Validator>();

/** Returns null when `args` satisfy `schema`, else a message naming the first failing field. */
export function checkArguments(schema: Record<string, unknown>, args: unknown): string | null {
  let v = byObject.get(schema);
  const key = v ? "" : JSON.stringify(schema);
  v ??= cache.get(key);
  if (!v) {
    try {
      v = new Validator(schema as Schema, "2020-12", false);
    } catch {
      return null; // a schema we cannot apply is the provider's to check
    }
    if (cache.size > 500) cache.clear();
    cache.set(key, v);
  }
  byObject.set(schema, v);
  let res;
  try {
    res = v.validate(args);
  } catch {
    return null;
  }
  if (res.valid) return null;
  // The deepest error names the field best; cfworker lists the outer keyword errors first.
  const leaf = res.errors[res.errors.length - 1] ?? res.errors[0];
  const path = (leaf?.instanceLocation ?? "#").replace(/^#\/?/, "").replace(/\//g, ".");
  // A missing property is reported at its parent: name the property itself instead.
  const missing = leaf?.keyword === "required" ? /property "([^"]*)"/.exec(leaf.error)?.[1] : undefined;
  if (missing !== undefined) return `${path ? path + "." : ""}${missing}: is required`;
  // `additionalProperties: false` is reported as a failed `false` schema.
  if (leaf?.keyword === "false") return `${path || "(arguments)"}: is not allowed by the input schema`;
  return `${path || "(arguments)"}: ${leaf?.error ?? "does not match the input schema"}`;
}
