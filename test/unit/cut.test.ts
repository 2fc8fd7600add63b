// Every "cut with …" goes through shared/text/cut.ts (issue 27 §6): an emoji (a surrogate pair in UTF-16) at the
// cut boundary is kept whole or dropped whole, never split into a lone surrogate. One test per former copy's caller.
import { describe, expect, it } from "vitest";
import { INBOX_LIMITS } from "../../shared/contract/inbox.js";
import { PUSH_LIMITS } from "../../shared/contract/push.js";
import type { MessageOut } from "../../shared/contract/protocol.js";
import { placeholderFor } from "../../shared/session/history.js";
import { closedOf } from "../../shared/session/push-answer.js";
import { callText, pushExtras, summarize } from "../../shared/session/report.js";
import { MemoryStore, type CallRow } from "../../shared/session/store.js";
import { cut, cutStart, head } from "../../shared/text/cut.js";
import { subjectOf } from "../../adapter/permissions/log.js";
import { logText, plainLine } from "../../web/src/calltext.js";
import { tail } from "../../web/src/labels.js";

const EMOJI = "😀"; // U+1F600: two UTF-16 units
/** A lone high or low surrogate: what a UTF-16 slice through an emoji leaves. */
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** `n - 2` ASCII letters then emojis: a UTF-16 cut at n - 1 lands inside the first emoji. */
const straddling = (n: number) => "a".repeat(n - 2) + EMOJI.repeat(4);

describe("cut keeps an emoji at the boundary whole", () => {
  it("cut, cutStart and head count code points", () => {
    expect(cut(`ab${EMOJI}${EMOJI}`, 3)).toBe(`ab…`);
    expect(cut(`a${EMOJI}${EMOJI}x`, 3)).toBe(`a${EMOJI}…`);
    expect(cut(`a${EMOJI}`, 2)).toBe(`a${EMOJI}`);
    expect(cutStart(`${EMOJI}${EMOJI}ab`, 3)).toBe(`…ab`);
    expect(cutStart(`x${EMOJI}${EMOJI}a`, 3)).toBe(`…${EMOJI}a`);
    expect(head(`a${EMOJI}b`, 2)).toBe(`a${EMOJI}`);
  });

  it("the inbox's waiting text (report callText) does not split an emoji at maxWaitingText", () => {
    const t = callText("input", { question: straddling(INBOX_LIMITS.maxWaitingText) });
    expect(t).not.toMatch(LONE);
    expect(t.endsWith("…")).toBe(true);
  });

  it("a notification's confirm labels and options (report pushExtras) do not split an emoji at maxLabel", () => {
    const long = straddling(PUSH_LIMITS.maxLabel);
    const c = pushExtras("confirm", { question: "q", yes_label: long, no_label: long });
    const o = pushExtras("choice", { question: "q", options: [long, "b"] });
    for (const s of [c.yes_label, c.no_label, ...(o.options ?? [])]) expect(s).not.toMatch(LONE);
    expect(c.yes_label?.endsWith("…")).toBe(true);
  });

  it("a closed call's answer in the inbox report (report outcomeOf) does not split an emoji at maxAnswer", () => {
    const store = new MemoryStore();
    const row: CallRow = {
      call_id: "c1",
      caller: "agent1",
      caller_role: "agent",
      name: "input",
      action: null,
      args: JSON.stringify({ question: "q" }),
      timeout_s: 60,
      deadline: 10_000_000,
      target: null,
      status: "open",
      checked: 1,
      result: null,
      keep_until: null,
      created_at: 1,
      fingerprint: "f",
      bytes: 10,
      deliv: "[]",
    };
    expect(store.insertCall(row)).toBe(true);
    summarize(store, [], 2);
    const answer = straddling(PUSH_LIMITS.maxAnswer);
    store.finishCall("c1", JSON.stringify({ answered_by: "dv_1", result: { message: answer } }), 10_000, row.bytes);
    const r = summarize(store, [], 3);
    const a = r.closed?.[0]?.answer;
    expect(a).toBeDefined();
    expect(a).not.toMatch(LONE);
    expect(a?.endsWith("…")).toBe(true);
  });

  it("regression: the answer a notification tap learns of a call already closed (push-answer closedOf) does not split an emoji at maxAnswer (it sliced UTF-16 units)", () => {
    const store = new MemoryStore();
    const row: CallRow = {
      call_id: "c2",
      caller: "agent1",
      caller_role: "agent",
      name: "input",
      action: null,
      args: JSON.stringify({ question: "q" }),
      timeout_s: 60,
      deadline: 10_000_000,
      target: null,
      status: "open",
      checked: 1,
      result: null,
      keep_until: null,
      created_at: 1,
      fingerprint: "f",
      bytes: 10,
      deliv: "[]",
    };
    expect(store.insertCall(row)).toBe(true);
    // maxAnswer - 1 letters then emojis: a UTF-16 slice at maxAnswer ends on the first emoji's high surrogate.
    const answer = "a".repeat(PUSH_LIMITS.maxAnswer - 1) + EMOJI.repeat(4);
    store.finishCall("c2", JSON.stringify({ answered_by: "dv_1", result: { message: answer } }), 10_000, row.bytes);
    const r = closedOf(store, "c2");
    expect(r).toMatchObject({ status: "closed", outcome: "answered", by: "dv_1" });
    const a = "answer" in r ? r.answer : undefined;
    expect(a).toBeDefined();
    expect(a).not.toMatch(LONE);
    expect(a?.endsWith("…")).toBe(true);
  });

  it("the permission log's subject (subjectOf) does not split an emoji at 120", () => {
    const s = subjectOf({ command: straddling(120) });
    expect(s).not.toMatch(LONE);
    expect(s?.endsWith("…")).toBe(true);
  });

  it("the PWA's one-line question (plainLine) and tool log (logText) do not split an emoji", () => {
    const line = plainLine(straddling(200));
    expect(line).not.toMatch(LONE);
    expect(line.endsWith("…")).toBe(true);
    const log = logText(straddling(160));
    expect(log).not.toMatch(LONE);
    expect(log.endsWith("…")).toBe(true);
  });

  it("a session's display name keeps its end (labels tail) without splitting an emoji", () => {
    const s = tail(EMOJI.repeat(4) + "b".repeat(46), 48);
    expect(s).not.toMatch(LONE);
    expect(s.startsWith("…")).toBe(true);
  });

  it("the kept history's placeholder of a long text (history shrink) does not split an emoji at 280", () => {
    const m: MessageOut = {
      type: "message",
      id: "m1",
      from: { role: "agent", client_id: "a1" },
      seq: 1,
      ts: 1,
      content: [{ type: "text", text: "a".repeat(279) + EMOJI.repeat(10) }],
    };
    const out = placeholderFor(m).content[0];
    expect(out?.type === "text" ? out.text : "").not.toMatch(LONE);
  });
});
