// The tools this agent provides (docs/adapter.md "provide"): their definitions and handlers, and one run of a
// handler per call the call book hands over (shared/client/call-book.ts de-duplicates and keeps the answers).
import { describeIssues, ToolDef as ToolDefSchema, ToolResultBody as ToolResultBodySchema } from "../../shared/contract/protocol.js";
import type { ToolCallOut, ToolDef } from "../../shared/contract/protocol.js";
import type { Outcome } from "../../shared/client/call-book.js";
import { LineUpError } from "../../shared/client/errors.js";
import { checkArguments } from "../../shared/contract/schema.js";
import { schemaOf } from "../e2e/frames.js";
import type { ToolCall, ToolHandler } from "./types.js";

export class Provider {
  readonly defs = new Map<string, ToolDef>();
  private readonly handlers = new Map<string, ToolHandler>();
  private readonly serving = new Map<string, AbortController>();
  private readonly waitingForHandler = new Map<string, ToolCallOut>();

  constructor(
    private readonly o: {
      /** A sealed session: the relay could not check arguments, so the provider does (docs/e2e.md rule 2). */
      sealed: () => boolean;
      answer: (call: ToolCallOut, body: Outcome) => void;
      log: (line: string) => void;
    },
  ) {}

  /** Registers a definition (checked); its handler may come later with provide(). */
  define(def: ToolDef): ToolDef[] {
    const parsed = parseDef(def);
    this.defs.set(parsed.name, parsed);
    return [...this.defs.values()];
  }

  /** Registers a tool with its handler; calls that waited for it run now. Returns the whole registration. */
  provide(def: ToolDef, handler: ToolHandler): ToolDef[] {
    const all = this.define(def);
    const name = all.find((d) => d.name === def.name)?.name ?? def.name;
    this.handlers.set(name, handler);
    for (const [id, call] of [...this.waitingForHandler]) {
      if (call.name !== name) continue;
      this.waitingForHandler.delete(id);
      this.call(call);
    }
    return all;
  }

  /** A call to run (new, or delivered again after it closed here). */
  call(f: ToolCallOut): void {
    if (this.serving.has(f.call_id)) return; // already working on it
    const handler = this.handlers.get(f.name);
    if (!handler) {
      if (this.defs.has(f.name)) {
        this.waitingForHandler.set(f.call_id, f); // registered via options; handler comes with provide()
        return;
      }
      return this.o.answer(f, { error: { code: "unknown_tool", message: `this agent does not provide "${f.name}"` } });
    }
    if (this.o.sealed()) {
      const schema = schemaOf([...this.defs.values()], f.name, f.action);
      if (schema === null) return this.o.answer(f, { error: { code: "unknown_action", message: `${f.name} has no action "${f.action ?? ""}"` } });
      const bad = schema ? checkArguments(schema, f.arguments) : null;
      if (bad) return this.o.answer(f, { error: { code: "invalid_arguments", message: `${f.name}${f.action ? "." + f.action : ""}: ${bad}` } });
    }
    const ac = new AbortController();
    this.serving.set(f.call_id, ac);
    const call: ToolCall = { ...f, signal: ac.signal };
    Promise.resolve()
      .then(() => handler(f.arguments, call))
      .then(
        (r): Outcome => {
          const ok = ToolResultBodySchema.safeParse(r);
          return ok.success ? { result: ok.data } : { error: { code: "bad_result", message: `the handler's result is invalid: ${describeIssues(ok.error)}` } };
        },
        (e: unknown): Outcome => ({
          error: { code: e instanceof LineUpError ? e.code : "handler_error", message: e instanceof Error ? e.message : String(e) },
        }),
      )
      .then((body) => {
        if (ac.signal.aborted) return; // cancelled or answered elsewhere: no result
        this.serving.delete(f.call_id);
        this.o.answer(f, body);
      })
      .catch((e: unknown) => this.o.log(`answering ${f.call_id} failed: ${String(e)}`));
  }

  /** The relay closed a call: its handler's signal aborts, and a call waiting for a handler is forgotten. */
  cancel(callId: string, reason: string): void {
    const ac = this.serving.get(callId);
    if (ac) {
      this.serving.delete(callId);
      ac.abort(new LineUpError("cancelled", `call ${callId} ${reason}`));
    }
    this.waitingForHandler.delete(callId);
  }

  /** Stopped for good: every running handler is aborted. */
  abortAll(): void {
    for (const ac of this.serving.values()) ac.abort();
    this.serving.clear();
  }
}

export function parseDef(t: ToolDef): ToolDef {
  const r = ToolDefSchema.safeParse(t);
  if (!r.success) throw new LineUpError("bad_tool", `tool definition ${JSON.stringify((t as { name?: unknown }).name)}: ${describeIssues(r.error)}`);
  return r.data;
}
