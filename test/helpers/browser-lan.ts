// A phone page paired with a session of `lineup serve`'s in-process relay (the LAN server), for the browser tests
// that run Claude Code's hooks or a raw agent against the card UI: the server's start and stop with the file's
// Chromium, and a session whose agent is online and whose paired app already lists the tool the test asks with.
// The app comes from LINEUP_TEST_WEB_DIR when set (a fresh `vite build --outDir`), else dist/web.
import { startLanServer, type LanServer } from "../../adapter/lan/server.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { newSession } from "./adapter-helpers.js";
import { pair, useBrowser } from "./browser.js";
import { project } from "./hooks-helpers.js";
import { connect, wsUrl } from "./raw-client.js";
import { freePort } from "./relay.js";

export interface PhoneOptions {
  /** the tool the app's catalog must list before the test asks (else the call would be unknown_tool) */
  tool: string;
  locale?: string;
  /** the agent's client id */
  clientId?: string;
  /** the project's local permission rules (.lineup/policy.json) */
  rules?: Parameters<typeof project>[0];
}

export function useLanPhone(token: string) {
  let lan: LanServer | undefined;
  const fx = useBrowser({
    relay: false,
    setup: async () => {
      lan = await startLanServer({
        port: await freePort(),
        host: "127.0.0.1",
        token,
        ...(process.env.LINEUP_TEST_WEB_DIR ? { webDir: process.env.LINEUP_TEST_WEB_DIR } : {}),
      });
    },
    teardown: async () => {
      await lan?.close();
    },
  });
  const url = () => lan!.url;

  /** A session whose agent is online (so pairing completes), a paired phone page, and the hook environment for it. */
  async function phone(o: PhoneOptions) {
    const s: SessionCreated = await newSession(url(), token);
    // A raw socket (its queue is attached before `open`: the in-process relay says hello at once).
    const agent = await connect(wsUrl(url(), s.session_id), { token: s.agent_token, clientId: o.clientId ?? "agent-main" });
    await agent.next("hello");
    const ctx = await fx.context("phone", o.locale ?? "en-US");
    const page = await ctx.newPage();
    await pair(page, s);
    await agent.next((f) => f.type === "tool.list" && Array.isArray(f.tools) && (f.tools as { name: string }[]).some((t) => t.name === o.tool), 15_000);
    const p = project(o.rules);
    const env = { LINEUP_RELAY_URL: url(), LINEUP_SESSION: s.session_id, LINEUP_TOKEN: s.agent_token, LINEUP_STATE_DIR: p.stateDir };
    return {
      s,
      agent,
      page,
      ctx,
      p,
      env,
      close: async () => {
        await agent.close();
        await ctx.close();
      },
    };
  }

  return {
    fx,
    get url() {
      return url();
    },
    phone,
  };
}
