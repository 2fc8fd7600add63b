// Decoding at the edge: size, JSON, depth, then the frame's schema — plain or sealed (docs/e2e.md) — into the
// one internal frame the router handles (frames.ts `InFrame`). Never throws.
import type { z } from "zod";
import {
  fromPlain,
  fromSealed,
  frameSchemas,
  PLAINTEXT_FIELDS,
  sealedSchemas,
  type ClientFrame,
  type ClientFrameType,
  type InFrame,
  type SealedFrame,
  type SealedFrameType,
} from "./frames.js";
import { LIMITS } from "./limits.js";
import type { ErrorCode, ErrorOut } from "./relay-frames.js";

type Refused = { ok: false; error: ErrorOut };
export type Decoded = { ok: true; frame: ClientFrame } | Refused;
/** A frame as the router takes it: plain or sealed, one shape per type. */
export type Inbound = { ok: true; frame: InFrame } | Refused;

/** Exact UTF-8 length of a string, without encoding it. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 2; // a surrogate pair: 2 units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

const utf8 = new TextEncoder();
export function byteLength(s: string): number {
  // Fast path: a string of n UTF-16 units is at most 3n bytes.
  if (s.length * 3 <= LIMITS.maxFrameBytes) return s.length;
  return utf8.encode(s).byteLength;
}

function err(code: ErrorCode, message: string, call_id?: string): Refused {
  return { ok: false, error: call_id === undefined ? { type: "error", code, message } : { type: "error", code, message, call_id } };
}

/** Parses one raw WebSocket frame of a plaintext session into its v1 shape. Never throws. */
export function decodeFrame(raw: string | ArrayBuffer | ArrayBufferView): Decoded {
  const v = decodeJson(raw);
  return v.ok ? parseFrameValue(v.value) : v;
}

/** Parses one raw WebSocket frame into the internal frame (`sealed`: of a sealed session, docs/e2e.md). Never throws. */
export function decodeInbound(raw: string | ArrayBuffer | ArrayBufferView, sealed: boolean): Inbound {
  const v = decodeJson(raw);
  if (!v.ok) return v;
  if (sealed) {
    const d = parseSealedValue(v.value);
    return d.ok ? { ok: true, frame: fromSealed(d.frame) } : d;
  }
  const d = parseFrameValue(v.value);
  return d.ok ? { ok: true, frame: fromPlain(d.frame) } : d;
}

/** A frame's size, JSON and nesting, checked in that order (so bad JSON stays bad_json). */
function decodeJson(raw: string | ArrayBuffer | ArrayBufferView): { ok: true; value: unknown } | Refused {
  if (typeof raw !== "string") {
    const size = raw.byteLength;
    if (size > LIMITS.maxFrameBytes) return err("too_large", `frame is ${size} bytes; the limit is ${LIMITS.maxFrameBytes}`);
    return err("bad_frame", "binary frames are not part of lineup/1; send UTF-8 JSON text frames");
  }
  if (raw.length > LIMITS.maxFrameBytes || byteLength(raw) > LIMITS.maxFrameBytes) {
    return err("too_large", `frame exceeds ${LIMITS.maxFrameBytes} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return err("bad_json", "frame is not valid JSON");
  }
  // Checked after parsing (so bad JSON stays bad_json): 10,000 levels crashed the handler with a RangeError (found by the fuzzer).
  if (jsonDepth(raw) > LIMITS.maxJsonDepth) return err("bad_frame", `frame nests deeper than ${LIMITS.maxJsonDepth} levels`);
  return { ok: true, value };
}

/** Deepest array/object nesting of JSON text, in one pass without recursion (string contents skipped). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped char
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) max = Math.max(max, ++depth);
    else if (c === 125 || c === 93) depth--;
  }
  return max;
}

export function parseFrameValue(value: unknown): Decoded {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return err("bad_frame", "a frame is one JSON object with a string `type`");
  }
  const rec = value as Record<string, unknown>;
  const type = rec.type;
  const callId = typeof rec.call_id === "string" && rec.call_id.length <= LIMITS.maxCallIdLength ? rec.call_id : undefined;
  if (typeof type !== "string" || !Object.hasOwn(frameSchemas, type)) {
    // Never String() a client's value: {"type":{"toString":1}} makes it throw (found by the fuzzer).
    const shown = typeof type === "string" ? type.slice(0, 40) : type === null ? "null" : typeof type;
    return err("bad_frame", `unknown frame type ${JSON.stringify(shown)}`, callId);
  }
  // A plaintext session carries no sealed parts: one key test per frame (a loop only for a tool list).
  if (
    rec.sealed !== undefined ||
    rec.preview !== undefined ||
    (type === "tool.list" && Array.isArray(rec.tools) && rec.tools.some((t) => typeof t === "object" && t !== null && "sealed" in t))
  ) {
    return err("bad_frame", `${type}: this session is not sealed; send plaintext fields, not sealed or preview`, callId);
  }
  const parsed = frameSchemas[type as ClientFrameType].safeParse(value);
  if (!parsed.success) return err("bad_frame", `${type}: ${describeIssues(parsed.error)}`, callId);
  return { ok: true, frame: parsed.data as ClientFrame };
}

/** A frame of a sealed session: envelopes where v1 has content, and none of the plaintext fields. */
export function parseSealedValue(value: unknown): { ok: true; frame: SealedFrame } | Refused {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return err("bad_frame", "a frame is one JSON object with a string `type`");
  const rec = value as Record<string, unknown>;
  const type = rec.type;
  const callId = typeof rec.call_id === "string" && rec.call_id.length <= LIMITS.maxCallIdLength ? rec.call_id : undefined;
  if (typeof type !== "string" || !Object.hasOwn(sealedSchemas, type)) {
    const shown = typeof type === "string" ? type.slice(0, 40) : type === null ? "null" : typeof type;
    return err("bad_frame", `unknown frame type ${JSON.stringify(shown)}`, callId);
  }
  const t = type as SealedFrameType;
  const plain = PLAINTEXT_FIELDS[t].find((k) => rec[k] !== undefined) ?? (t === "tool.list" ? plaintextToolField(rec.tools) : undefined);
  if (plain) return err("bad_frame", `${t}: this session is sealed; ${plain} must travel inside the sealed envelope`, callId);
  const parsed = sealedSchemas[t].safeParse(value);
  if (!parsed.success) return err("bad_frame", `${t}: ${describeIssues(parsed.error)}`, callId);
  return { ok: true, frame: parsed.data as SealedFrame };
}

/** A tool description or schema in plaintext inside a sealed session's tool list. */
function plaintextToolField(tools: unknown): string | undefined {
  if (!Array.isArray(tools)) return undefined;
  for (const t of tools) {
    if (typeof t !== "object" || t === null) continue;
    const o = t as Record<string, unknown>;
    for (const k of ["description", "inputSchema"]) if (o[k] !== undefined) return `tools[].${k}`;
    if (Array.isArray(o.actions))
      for (const a of o.actions)
        if (
          typeof a === "object" &&
          a !== null &&
          ((a as Record<string, unknown>).description !== undefined || (a as Record<string, unknown>).inputSchema !== undefined)
        )
          return "tools[].actions[].description/inputSchema";
  }
  return undefined;
}

export function describeIssues(e: z.ZodError): string {
  return e.issues
    .slice(0, 3)
    .map((i) => `${i.path.length ? i.path.join(".") : "(frame)"}: ${i.message}`)
    .join("; ");
}
