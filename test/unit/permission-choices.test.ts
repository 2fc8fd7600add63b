// Issue 34 item 2: a `permission` call that names the choices its caller accepts (Hermes' allowed_choices) is
// answered with exactly those — by the notification's taps, by a tap's answer on the relay, and in the push
// extras a sealed preview carries — while a call without `choices` (Claude Code's) keeps Allow / Deny.
import { describe, expect, it } from "vitest";
import { choiceResult, permissionChoices } from "../../shared/tools/choices.js";
import { tapActions, tapResult } from "../../shared/tools/meaning.js";
import { pushExtras } from "../../shared/tools/push-extras.js";
import { resultFor } from "../../shared/session/push-answer.js";

const L = { yes: "Yes", no: "No", allow: "Allow", deny: "Deny", session: "Allow this session", always: "Always allow" };
const hermes = { tool_name: "terminal", input: { command: "rm -rf build" }, choices: ["once", "session", "deny"] };

describe("permission choices", () => {
  it("reads the known choices in the order once, session, always, deny and ignores the rest", () => {
    expect(permissionChoices(["deny", "bogus", "session", "once"])).toEqual(["once", "session", "deny"]);
    expect(permissionChoices(["bogus"])).toBeUndefined();
    expect(permissionChoices("once")).toBeUndefined();
  });

  it("gives session and always as allow with their own message, once as Claude Code's allow", () => {
    expect(choiceResult("once")).toEqual({ message: "allow", behavior: "allow" });
    expect(choiceResult("session")).toEqual({ message: "session", behavior: "allow" });
    expect(choiceResult("always")).toEqual({ message: "always", behavior: "allow" });
    expect(choiceResult("deny")).toEqual({ message: "deny", behavior: "deny" });
  });

  it("puts a permission's choices into its push extras, and nothing for Claude Code's", () => {
    expect(pushExtras("permission", hermes)).toEqual({ options: ["once", "session", "deny"] });
    expect(pushExtras("permission", { tool_name: "Bash", input: { command: "ls" } })).toEqual({});
  });

  it("offers exactly the passed choices as notification taps when they fit", () => {
    expect(tapActions("permission", { options: ["once", "session", "deny"] }, L, 3)).toEqual([
      { action: "allow", title: "Allow" },
      { action: "session", title: "Allow this session" },
      { action: "deny", title: "Deny" },
    ]);
  });

  it("keeps deny and the first others when the browser allows fewer taps than choices", () => {
    expect(tapActions("permission", { options: ["once", "session", "always", "deny"] }, L, 2)).toEqual([
      { action: "allow", title: "Allow" },
      { action: "deny", title: "Deny" },
    ]);
  });

  it("keeps Claude Code's Allow / Deny taps for a permission without choices", () => {
    expect(tapActions("permission", {}, L, 2)).toEqual([
      { action: "allow", title: "Allow" },
      { action: "deny", title: "Deny" },
    ]);
    expect(resultFor("permission", { tool_name: "Bash" }, "allow")).toEqual({ message: "allow", behavior: "allow" });
    expect(resultFor("permission", { tool_name: "Bash" }, "session")).toBeUndefined();
  });

  it("answers a session tap on the relay as session, and refuses a tap the caller did not offer", () => {
    expect(resultFor("permission", hermes, "session")).toEqual({ message: "session", behavior: "allow" });
    expect(resultFor("permission", hermes, "always")).toBeUndefined();
    expect(resultFor("permission", { ...hermes, choices: ["session", "deny"] }, "allow")).toBeUndefined();
    expect(tapResult("permission", "deny", ["once", "deny"])).toEqual({ message: "deny", behavior: "deny" });
  });
});
