// The PWA's session socket address (web/src/session-status.ts), which the early dial (web/src/early.ts) and the
// connection (web/src/conn.ts) share. Regression, issue 33: the early socket connects before the app's code has
// registered its tools, and a relay counting it as a provider refused a new call `unknown_tool` meanwhile.
import { describe, expect, it } from "vitest";
import { socketUrl } from "../../web/src/session-status.js";

describe("the PWA's session socket address", () => {
  it("asks the relay to count it as a provider only once it registers (register=first), beside its client id", () => {
    const u = new URL(socketUrl({ sid: "s_1234567890", token: "t", origin: "https://relay.example", label: "", addedAt: 0 }, "dev-1"));
    expect(u.protocol).toBe("wss:");
    expect(u.pathname).toBe("/api/sessions/s_1234567890/ws");
    expect(Object.fromEntries(u.searchParams)).toEqual({ client_id: "dev-1", register: "first" });
  });

  it("uses ws: for a plain-http relay (a LAN server or `npm run dev`)", () => {
    expect(socketUrl({ sid: "s_1234567890", token: "t", origin: "http://127.0.0.1:8787", label: "", addedAt: 0 }, "d").startsWith("ws://127.0.0.1:8787/")).toBe(
      true,
    );
  });
});
