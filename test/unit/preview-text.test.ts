// The Waiting list's preview of a markdown question (issue 28 item 9): one plain line, no table pipes.
import { describe, expect, it } from "vitest";
import { previewText, waitText } from "../../web/src/calltext.js";

const PLAN = [
  "## Migration plan for billing-service",
  "",
  "I found **three** ways to migrate:",
  "",
  "| Option | Risk | Downtime |",
  "|--------|:----:|---------:|",
  "| Big bang | high | 2 h |",
  "| Dual write | low | none |",
].join("\n");

describe("previewText", () => {
  it("turns a markdown table into cells joined by · and drops its separator row", () => {
    expect(previewText(PLAN)).toBe(
      "Migration plan for billing-service I found three ways to migrate: · Option · Risk · Downtime · Big bang · high · 2 h · Dual write · low · none",
    );
  });

  it("reads the relay's flattened text (newlines already spaces) the same way", () => {
    expect(previewText(PLAN.replace(/\s+/g, " "))).toBe(previewText(PLAN));
  });

  it("keeps plain text as it is and strips emphasis, links, fences and list markers", () => {
    expect(previewText("Deploy to staging?")).toBe("Deploy to staging?");
    expect(previewText("- [x] done\n- see [the docs](https://x.test)\n```\ncode\n```\n> quoted _word_")).toBe("done see the docs code quoted word");
  });

  it("is what the Waiting list shows for a call seen live (waitText)", () => {
    expect(waitText({ args: { question: PLAN } })).not.toContain("|");
  });
});
