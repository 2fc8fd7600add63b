// The edge's HTTP plumbing, shared by its routes and the Worker's own (worker/oauth, worker/mcp): the one error envelope
// (`httpError`, shared/contract/protocol.ts) every refusal is written in, capped body readers, and request bodies through
// @hono/zod-validator behind the caps.
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { zValidator } from "@hono/zod-validator";
import { z } from "../contract/zod.js";
import { describeIssues, httpError, jsonDepth, LIMITS } from "../contract/protocol.js";

export type Status = 400 | 401 | 403 | 404 | 409 | 413 | 426 | 429 | 500 | 502 | 503;

/** The error envelope `{ error: { code, message, ...extra } }` with its status: every refusal of the servers' edge. */
export function fail(c: Context, status: Status, code: string, message: string, extra?: Record<string, unknown>): Response {
  const body = httpError(code, message);
  return c.json(extra ? { error: { ...body.error, ...extra } } : body, status);
}

/**
 * A request's or fetched response's body as text, or undefined once it passes `max` bytes — counted while streaming, so a chunked
 * body without content-length is never buffered whole (and bytes, not UTF-16 units, are counted).
 */
export async function readCapped(msg: Request | Response, max: number): Promise<string | undefined> {
  if (Number(msg.headers.get("content-length") ?? "0") > max) {
    // A fetched response we drop is cancelled to free its connection; a request's unread body is left to the
    // runtime — cancelling it makes workerd reset the client's connection before the 413 is sent.
    if (msg instanceof Response) await msg.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (!msg.body) return "";
  const reader = msg.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const ch of chunks) {
    all.set(ch, at);
    at += ch.byteLength;
  }
  return new TextDecoder().decode(all);
}

/** A JSON body with the size and depth limits; `value` is undefined for an empty body. */
export async function readJson(c: Context, max: number = LIMITS.maxHttpBodyBytes): Promise<{ ok: true; value: unknown } | { ok: false; res: Response }> {
  const text = await readCapped(c.req.raw, max);
  if (text === undefined) return { ok: false, res: fail(c, 413, "too_large", `body over ${max} bytes`) };
  if (text.trim() === "") return { ok: true, value: undefined };
  // The same depth cap as frames: deeper JSON overflows the stack of recursive validation (found by the fuzzer).
  if (jsonDepth(text) > LIMITS.maxJsonDepth) return { ok: false, res: fail(c, 400, "bad_request", `JSON nests deeper than ${LIMITS.maxJsonDepth} levels`) };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, res: fail(c, 400, "bad_json", "the body is not valid JSON") };
  }
}

/**
 * A JSON request body of at most `max` bytes and LIMITS.maxJsonDepth levels (413 too_large, 400 bad_request, 400 bad_json),
 * an empty body read as `{}`; then `zValidator("json", schema, refuse())` checks its shape. The validator reads bodies of a
 * JSON media type only: the checked body is handed to it as one, whatever content-type the client sent (as before).
 */
export const cappedJson = (max: number = LIMITS.maxHttpBodyBytes) =>
  createMiddleware(async (c, next) => {
    const b = await readJson(c, max);
    if (!b.ok) return b.res;
    const headers = new Headers(c.req.raw.headers);
    headers.set("content-type", "application/json");
    headers.delete("content-length");
    headers.delete("transfer-encoding");
    c.req.raw = new Request(c.req.url, { method: c.req.method, headers });
    c.req.bodyCache.json = Promise.resolve(b.value ?? {});
    await next();
  });

/** zValidator's hook: a body of the wrong shape is a 400 `code` (bad_request; bad_frame for calls) naming its issues. */
export const refuse =
  (code = "bad_request") =>
  (r: { success: true } | { success: false; error: z.core.$ZodError }, c: Context): Response | undefined => {
    if (r.success) return undefined;
    // Our schemas are zod's classic ones: their errors are ZodErrors.
    return fail(c, 400, code, r.error instanceof z.ZodError ? describeIssues(r.error) : "the body does not match its schema");
  };

/** The body middleware pair for a route: capped JSON, then its schema. */
export const body = <S extends z.ZodType>(schema: S, opts: { max?: number; code?: string } = {}) =>
  [cappedJson(opts.max), zValidator("json", schema, refuse(opts.code))] as const;
