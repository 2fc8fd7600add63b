// What held before round 3 and must keep holding (issue 26 "Keep"), where no earlier test said it: wrong
// pairing codes are braked per address like wrong keys (60 a minute, then 429 even for the right code).
import { describe, expect, it } from "vitest";
import type { CodeIssued, MachineCreated } from "../../shared/contract/inbox.js";
import { fetchWorker, RELAY_KEY } from "./helpers.js";

const post = (path: string, token: string | undefined, body: unknown, addr: string) =>
  fetchWorker(path, {
    method: "POST",
    headers: { "content-type": "application/json", "cf-connecting-ip": addr, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });

describe("pairing codes stay single-use and rate-limited", () => {
  it("after 60 wrong pairing codes in a minute from one address the next, even the right one, gets 429; another address still pairs with it, once", async () => {
    const m = (await (await post("/api/inboxes", RELAY_KEY, { machine_name: "laptop" }, "192.0.2.40")).json()) as MachineCreated;
    const issued = (await (await post("/api/inbox/pairings", m.machine_credential, {}, "192.0.2.40")).json()) as CodeIssued;
    const guesser = "198.51.100.66";
    for (let i = 0; i < 60; i++) expect((await post("/api/pair", undefined, { code: `WRONG-${String(i).padStart(4, "0")}` }, guesser)).status).toBe(404);
    const braked = await post("/api/pair", undefined, { code: issued.code }, guesser);
    expect(braked.status).toBe(429);
    expect(((await braked.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    expect((await post("/api/pair", undefined, { code: issued.code, name: "phone" }, "198.51.100.67")).status).toBe(201);
    expect((await post("/api/pair", undefined, { code: issued.code, name: "again" }, "198.51.100.68")).status).toBe(404);
  });
});
