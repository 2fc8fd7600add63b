// Versions that tell the truth (issue 30): one number from packages/agent/package.json for `lineup --version`
// and `lineup mcp`, the relay's own from the root package.json, and the warning when a relay speaks a newer
// protocol — once, not per call or reconnect.
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { VERSION_LINE } from "../../adapter/cli/main.js";
import { isOurs } from "../../adapter/setup/index.js";
import {
  AGENT_PACKAGE,
  AGENT_VERSION,
  PROTOCOL_WARNED_FILE,
  protocolMemory,
  protocolNumber,
  protocolWarner,
  UPGRADE_COMMAND,
} from "../../adapter/client/version.js";

const json = (f: string) => JSON.parse(readFileSync(new URL(f, import.meta.url), "utf8")) as { name: string; version: string };

describe("the agent's version", () => {
  it("is the agent package's, and lineup --version prints it with the protocol", () => {
    const agent = json("../../packages/agent/package.json");
    expect([AGENT_PACKAGE, AGENT_VERSION]).toEqual([agent.name, agent.version]);
    expect(VERSION_LINE).toBe(`lineup ${agent.version} (protocol lineup/1)`);
    expect(UPGRADE_COMMAND).toBe(`npm install -g ${agent.name}@latest`);
  });

  it("is released with the relay's: the two package.json versions agree (build.mjs refuses otherwise)", () => {
    expect(json("../../packages/agent/package.json").version).toBe(json("../../package.json").version);
  });
});

describe("a relay speaking a newer protocol", () => {
  it("reads lineup/N and nothing else", () => {
    expect([protocolNumber("lineup/1"), protocolNumber("lineup/12")]).toEqual([1, 12]);
    for (const bad of ["lineup/0", "lineup/01", "lineup/x", "LINEUP/2", " lineup/2", 2, undefined, null]) expect(protocolNumber(bad)).toBeUndefined();
  });

  it("is warned about once per relay and protocol, with the upgrade command; the same protocol, an older one or garbage never", () => {
    const warn = protocolWarner();
    expect(warn("lineup/1", "https://a.example")).toBeUndefined();
    expect(warn("nonsense", "https://a.example")).toBeUndefined();
    const first = warn("lineup/2", "https://a.example");
    expect(first).toContain("speaks lineup/2");
    expect(first).toContain(UPGRADE_COMMAND);
    expect(warn("lineup/2", "https://a.example")).toBeUndefined(); // the next hello, after a reconnect
    expect(warn("lineup/2", "https://b.example")).toContain("https://b.example");
    expect(warn("lineup/3", "https://a.example")).toContain("speaks lineup/3"); // the relay moved on again
    expect(warn("lineup/2", "https://a.example")).toBeUndefined();
  });

  it("regression (warned per process): a second process with the same state directory is not warned again — each `lineup call` was", () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-proto-"));
    const first = protocolWarner(); // one process
    expect(first("lineup/2", "https://a.example", protocolMemory(dir))).toContain(UPGRADE_COMMAND);
    const second = protocolWarner(); // the next `lineup call`, a fresh process
    expect(second("lineup/2", "https://a.example", protocolMemory(dir))).toBeUndefined();
    expect(second("lineup/2", "https://b.example", protocolMemory(dir))).toContain("https://b.example");
    expect(protocolWarner()("lineup/3", "https://a.example", protocolMemory(dir))).toContain("speaks lineup/3");
    expect(JSON.parse(readFileSync(join(dir, PROTOCOL_WARNED_FILE), "utf8"))).toEqual({ "https://a.example": "lineup/3", "https://b.example": "lineup/2" });
    expect(statSync(join(dir, PROTOCOL_WARNED_FILE)).mode & 0o777).toBe(0o600);
  });

  it("treats a garbled memory as empty (warns, then rewrites it) and warns once per process where it cannot be written", () => {
    const dir = mkdtempSync(join(tmpdir(), "lineup-proto-"));
    writeFileSync(join(dir, PROTOCOL_WARNED_FILE), "[not json");
    expect(protocolWarner()("lineup/2", "https://a.example", protocolMemory(dir))).toContain("speaks lineup/2");
    expect(protocolWarner()("lineup/2", "https://a.example", protocolMemory(dir))).toBeUndefined();
    const file = join(dir, "a-file");
    writeFileSync(file, "");
    const warn = protocolWarner();
    const unwritable = protocolMemory(join(file, "state")); // a state "directory" under a file: never written
    expect(warn("lineup/2", "https://a.example", unwritable)).toContain("speaks lineup/2");
    expect(warn("lineup/2", "https://a.example", unwritable)).toBeUndefined();
  });
});

describe("lineup setup finds its own hooks however the package was started", () => {
  it("regression (package renamed): `npx -y lineup-agent hook stop` is LineUp's, updated in place rather than added twice", () => {
    for (const c of [
      "lineup hook stop",
      "npx -y lineup-agent hook stop",
      "npx lineup-relay hook stop --wait 25",
      "node '/opt/x/dist/bin/lineup.mjs' hook stop",
    ])
      expect(isOurs(c, "stop"), c).toBe(true);
    for (const c of ["lineup-agentx hook stop", "lineup hook stopper", "mylineup-agent-tool run"]) expect(isOurs(c, "stop"), c).toBe(false);
  });
});
