// The human-readable side of the bridge: how a call looks in a plain IM app, and how a plain text reply
// ("#K3F 2") becomes the call's result. Pure functions, no I/O.
import type { ContentBlock, ToolResultBody } from "../../shared/contract/protocol.js";
import { WK_LIMITS } from "./wire.js";
import { cut } from "../../shared/text/cut.js";
import { ANSWERS } from "../../shared/tools/meaning.js";
import { parseCodeReply } from "../../shared/text/code-reply.js";

export { parseCodeReply };

/** Short codes: `#` + 3–8 capital letters or digits. We issue 4 from an alphabet without 0/O/1/I. */
const CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
export const CODE_LENGTH = 4;

export function newCode(): string {
  const r = crypto.getRandomValues(new Uint8Array(CODE_LENGTH));
  return Array.from(r, (b) => CODE_ALPHABET[b % CODE_ALPHABET.length]).join("");
}

const str = (v: unknown) => (typeof v === "string" ? v : "");
const strings = (v: unknown) => (Array.isArray(v) ? v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))) : []);

/** The text message that renders a call in a plain IM app, carrying its code. */
export function renderCall(call: { name: string; action?: string; arguments: Record<string, unknown> }, code: string): string {
  const a = call.arguments;
  const tag = `#${code}`;
  let text: string;
  switch (call.name) {
    case "choice": {
      const opts = strings(a.options);
      const multi = a.multiple === true;
      text = [
        `${tag} ${str(a.question)}`,
        ...opts.map((o, i) => `${i + 1}. ${o}`),
        `Reply "${tag} <number or text>"${multi ? ", several separated by commas" : ""}.`,
      ].join("\n");
      break;
    }
    case "confirm": {
      const yes = str(a.yes_label);
      const no = str(a.no_label);
      text = `${tag} ${str(a.question)}\nReply "${tag} yes"${yes ? ` (${yes})` : ""} or "${tag} no"${no ? ` (${no})` : ""}.`;
      break;
    }
    case "input":
      text = `${tag} ${str(a.question)}\nReply "${tag} <your answer>".`;
      break;
    case "ask_question":
      text = `${tag} ${str(a.question)}${a.project_directory ? `\n(${str(a.project_directory)})` : ""}\nReply "${tag} <your answer>".`;
      break;
    case "work_report":
      text = `${tag} Work report${a.project_directory ? ` (${str(a.project_directory)})` : ""}:\n${str(a.summary)}\nReply "${tag} ok" to approve, or "${tag} <feedback>".`;
      break;
    default:
      text = `${tag} ${call.name}${call.action ? "." + call.action : ""} ${cut(JSON.stringify(a), 500)}\n(This call needs a LineUp-aware app.)`;
  }
  return cut(text, WK_LIMITS.maxTextChars);
}

/** Tools a plain-text reply can answer. */
export const TEXT_ANSWERABLE = new Set(["choice", "confirm", "input", "ask_question", "work_report"]);

const YES = new Set(["yes", "y", "是", "是的", "好", "ok", "确认"]);
const NO = new Set(["no", "n", "否", "不", "不是", "取消"]);
const APPROVE = new Set(["ok", "okay", "yes", "approve", "approved", "lgtm", "同意", "通过", "好"]);

/** The result a text answer gives a call, or a short problem to tell the human. */
export function textAnswer(name: string, args: Record<string, unknown>, answer: string): { result: ToolResultBody } | { problem: string } {
  switch (name) {
    case "choice": {
      const opts = strings(args.options);
      const parts = args.multiple === true ? answer.split(/[,，、;；\s]+/).filter(Boolean) : [answer];
      const picked: string[] = [];
      for (const p of parts) {
        const n = /^\d+$/.test(p) ? Number(p) : NaN;
        const byText = opts.find((o) => o.trim().toLowerCase() === p.trim().toLowerCase());
        const hit = n >= 1 && n <= opts.length ? opts[n - 1] : byText;
        if (hit === undefined) return { problem: `answer with an option's number (1–${opts.length}) or its text` };
        if (!picked.includes(hit)) picked.push(hit);
      }
      if (picked.length === 0) return { problem: `answer with an option's number (1–${opts.length}) or its text` };
      return { result: ANSWERS.picked(picked) };
    }
    case "confirm": {
      const a = answer.trim().toLowerCase();
      const yesLabel = str(args.yes_label).trim().toLowerCase();
      const noLabel = str(args.no_label).trim().toLowerCase();
      if (YES.has(a) || (yesLabel && a === yesLabel)) return { result: ANSWERS.yes() };
      if (NO.has(a) || (noLabel && a === noLabel)) return { result: ANSWERS.no() };
      return { problem: "answer yes or no (是/否)" };
    }
    case "input":
    case "ask_question":
      return answer ? { result: { message: answer } } : { problem: "write your answer after the code" };
    case "work_report": {
      if (!answer) return { problem: `reply "ok" to approve, or write your feedback after the code` };
      return APPROVE.has(answer.toLowerCase()) ? { result: ANSWERS.approved() } : { result: { message: answer, approved: false } };
    }
    default:
      return { problem: "this call needs a LineUp-aware app; it cannot be answered with text" };
  }
}

/** An agent `message` as IM text: text blocks as they are, other blocks summarised. */
export function renderContent(content: readonly ContentBlock[]): string {
  const parts = content.map((b) => {
    if (b.type === "text") return b.text;
    if (b.type === "image") return `[image ${b.mimeType}]`;
    if (b.type === "audio") return `[audio ${b.mimeType}]`;
    const r = b.resource;
    return r.text !== undefined ? r.text : `[file ${r.uri}]`;
  });
  return cut(parts.join("\n"), WK_LIMITS.maxTextChars);
}

const MEDIA: Record<number, string> = { 2: "image", 3: "gif", 4: "voice", 5: "video", 8: "file" };

/** Content blocks for an inbound IM payload that is not a LineUp frame, or undefined to ignore it. */
export function inboundContent(p: Record<string, unknown>): ContentBlock[] | undefined {
  if (p.type === 1) return typeof p.content === "string" && p.content !== "" ? [{ type: "text", text: p.content }] : undefined;
  const kind = MEDIA[p.type as number];
  if (!kind) return undefined;
  const url = str(p.url);
  const name = str(p.name);
  const blocks: ContentBlock[] = [{ type: "text", text: `[${kind}${name ? " " + name : ""}]${url ? " " + url : ""}` }];
  if (url) blocks.push({ type: "resource", resource: { uri: url } });
  return blocks;
}
