// shared/session/sockets.ts: send and close wrapped once for both servers' sockets.
import { describe, expect, it } from "vitest";
import { closeQuietly, closeReason, sendIfOpen, type SocketLike } from "../../shared/session/sockets.js";

class FakeSocket implements SocketLike {
  readyState = 1;
  closes: { code?: number; reason?: string }[] = [];
  sent: string[] = [];
  send(data: string) {
    if (this.readyState !== 1) throw new Error("not open");
    this.sent.push(data);
  }
  close(code?: number, reason?: string) {
    // A real socket throws on a reason over 123 bytes and on reserved codes.
    if (reason !== undefined && new TextEncoder().encode(reason).byteLength > 123) throw new SyntaxError("reason too long");
    if (code === 1005 || code === 1006) throw new TypeError("reserved code");
    this.closes.push({ code, reason });
    this.readyState = 3;
  }
}

describe("closeQuietly", () => {
  // Regression (issue 10): 1005/1006 were mapped to 1000 and the dead socket was closed anyway; partyserver
  // skips them, since they only describe a connection that is already gone.
  it.each([1005, 1006, 1015])("regression: sends no close frame for %s (the socket is already gone)", (code) => {
    const ws = new FakeSocket();
    closeQuietly(ws, code, "bye");
    expect(ws.closes).toEqual([]);
  });

  // Regression (issue 10): the reason was cut at 120 UTF-16 units, which is up to 360 bytes of CJK text, so
  // the close threw and was swallowed — the socket stayed open.
  it("regression: cuts a reason to 123 bytes of UTF-8 (not 120 UTF-16 units), on a character boundary", () => {
    const ws = new FakeSocket();
    closeQuietly(ws, 4004, "会话已删除".repeat(20));
    expect(ws.closes).toHaveLength(1);
    const r = ws.closes[0]!.reason!;
    expect(new TextEncoder().encode(r).byteLength).toBeLessThanOrEqual(123);
    expect(r.length).toBe(41); // 41 three-byte characters = 123 bytes
    expect(closeReason("😀".repeat(40))).toBe("😀".repeat(30)); // 4-byte characters are never split
    expect(closeReason("short")).toBe("short");
  });

  it("keeps codes an endpoint may send and maps the others to 1000", () => {
    const codes = [1000, 1001, 1011, 4004, 4409, 3000, 999, 1016, 2999, 5000].map((c) => {
      const ws = new FakeSocket();
      closeQuietly(ws, c, "x");
      return ws.closes[0]?.code;
    });
    expect(codes).toEqual([1000, 1001, 1011, 4004, 4409, 3000, 1000, 1000, 1000, 1000]);
  });

  it("never throws on a closed socket, and sendIfOpen says whether it sent", () => {
    const ws = new FakeSocket();
    expect(sendIfOpen(ws, "a")).toBe(true);
    closeQuietly(ws, 1000, "done");
    expect(() => closeQuietly(ws, 1000, "again")).not.toThrow();
    expect(sendIfOpen(ws, "b")).toBe(false);
    expect(ws.sent).toEqual(["a"]);
  });
});
