// await_answer's own `timeout` (issue 28 item 8), for both servers (`lineup mcp` and POST /mcp): planned from
// the arguments, and a cap on the wait budget that never lengthens it.
import { describe, expect, it } from "vitest";
import { capWait, waitBudget } from "../../shared/mcp/budget.js";
import { prepareToolCall } from "../../shared/mcp/prepare.js";

const cx = { appTools: [], defaultTimeoutS: 600, maxTimeoutS: 86_400 };
const ID = "mcp_AAAAAAAAAAAAAAAAAAAAAA";

describe("await_answer's timeout", () => {
  it("is planned as the wait's cap; without it nothing caps the wait", () => {
    expect(prepareToolCall("await_answer", { call_id: ID, timeout: 5 }, cx)).toEqual({ kind: "await", callId: ID, waitS: 5 });
    expect(prepareToolCall("await_answer", { call_id: ID }, cx)).toEqual({ kind: "await", callId: ID });
  });

  it("a timeout that is not a positive number is invalid_arguments, answered at once", () => {
    for (const bad of ["soon", 0, -3, Number.NaN]) {
      const p = prepareToolCall("await_answer", { call_id: ID, timeout: bad }, cx);
      expect(p.kind).toBe("done");
      expect(JSON.stringify(p)).toContain("invalid_arguments");
    }
  });

  it("shortens the budget and never lengthens it", () => {
    const b = waitBudget({ progress: false, timeoutS: 600, client: [], transport: "http", noProgressS: 45 });
    expect(capWait(b, 5)).toEqual({ seconds: 5, why: "await_answer's timeout" });
    expect(capWait(b, 500)).toBe(b);
    expect(capWait(b, undefined)).toBe(b);
  });
});
