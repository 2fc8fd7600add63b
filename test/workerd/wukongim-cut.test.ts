// The WuKongIM bridge's text goes through shared/text/cut.ts (issue 27 §6): an emoji (a surrogate pair) at the cut
// boundary is never split into a lone surrogate (the former local copy sliced UTF-16 units).
import { describe, expect, it } from "vitest";
import { renderCall, renderContent } from "../../worker/wukongim/text.js";
import { WK_LIMITS } from "../../worker/wukongim/wire.js";

const EMOJI = "😀";
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const straddling = (n: number) => "a".repeat(n - 2) + EMOJI.repeat(4);

describe("WuKongIM text cuts", () => {
  it("the WuKongIM text of a call and of a message does not split an emoji at maxTextChars", () => {
    const call = renderCall({ name: "input", arguments: { question: straddling(WK_LIMITS.maxTextChars) } }, "K3F9");
    const other = renderCall({ name: "canvas", action: "draw", arguments: { path: straddling(500) } }, "K3F9");
    const msg = renderContent([{ type: "text", text: straddling(WK_LIMITS.maxTextChars) }]);
    for (const s of [call, other, msg]) {
      expect(s).not.toMatch(LONE);
      expect(s).toContain("…");
    }
  });
});
