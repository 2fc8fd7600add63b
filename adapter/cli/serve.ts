// `lineup serve`: direct LAN mode — the relay contract and the app served from this machine
// (adapter/lan/server.ts, loaded on demand), one session created and saved for this directory.
import { networkInterfaces } from "node:os";
import { resolve } from "node:path";
import { LAN_PORT } from "../../shared/contract/defaults.js";
import type { SessionCreated } from "../../shared/contract/protocol.js";
import { randomId } from "../../shared/edge/tokens.js";
import { clientIdFor, defaultStateDir, saveSession } from "../client/state.js";
import { savedFromCreated } from "../client/ensure.js";
import { err, out, parse, printLink, say, str, UsageError, warnSecretFlags } from "./common.js";
import { HELP } from "./help.js";

export function lanAddresses(): string[] {
  const ips: string[] = [];
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) ips.push(a.address);
  return ips;
}

export async function cmdServe(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    port: { type: "string" },
    host: { type: "string" },
    web: { type: "string" },
    ttl: { type: "string" },
    "no-qr": { type: "boolean" },
    "allow-host": { type: "string", multiple: true },
  });
  if (values.help) return (out(HELP.serve!), 0);
  const port = Number(str(values, "port") ?? (process.env.LINEUP_PORT || LAN_PORT));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError("--port must be an integer 0-65535");
  const ttl = str(values, "ttl") === undefined ? undefined : Number(str(values, "ttl"));
  if (ttl !== undefined && !(Number.isInteger(ttl) && ttl >= 60)) throw new UsageError("--ttl must be an integer number of seconds ≥ 60");
  warnSecretFlags(values, ["token=LINEUP_LAN_TOKEN"]);
  let token = str(values, "token") ?? (process.env.LINEUP_LAN_TOKEN || undefined);
  if (token !== undefined && token.length < 16) throw new UsageError("the token must be at least 16 characters");
  const generated = token === undefined;
  token ??= randomId(24);
  const host = str(values, "host") ?? "0.0.0.0";
  const { startLanServer } = await import("../lan/server.js");
  let server: Awaited<ReturnType<typeof startLanServer>>;
  try {
    const allowHosts = Array.isArray(values["allow-host"]) ? values["allow-host"].filter((h): h is string => typeof h === "string") : [];
    server = await startLanServer({ port, host, token, allowHosts, ...(str(values, "web") ? { webDir: resolve(str(values, "web")!) } : {}) });
  } catch (e) {
    err(`lineup serve: cannot listen on ${host}:${port}: ${(e as Error).message}`);
    return 2;
  }
  const local = `http://127.0.0.1:${server.port}`;
  const res = await fetch(`${local}/api/sessions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ label: `lineup serve ${process.cwd()}`.slice(0, 120), ...(ttl ? { ttl_s: ttl } : {}) }),
  });
  const created = (await res.json()) as SessionCreated;
  const stateDir = str(values, "state-dir") ?? defaultStateDir();
  // Saved for (local URL, cwd): `LINEUP_RELAY_URL=http://127.0.0.1:<port> lineup call …` finds it.
  saveSession(stateDir, savedFromCreated(created, local, process.cwd(), clientIdFor(stateDir, created.session_id)));
  const ips = host === "0.0.0.0" || host === "::" ? lanAddresses() : [host];
  const frag = `#s=${encodeURIComponent(created.session_id)}&t=${encodeURIComponent(created.app_token)}`;
  const links = ips.map((ip) => `http://${ip}:${server.port}/${frag}`);
  err(`LineUp direct LAN mode on ${host}:${server.port} (no relay; in-memory: restarting forgets sessions)`);
  err(
    "warning: this is plain HTTP. Anyone on the same network can read the tokens and answers that cross it; use it on a network you trust, or bind one interface with --host.",
  );
  if (generated) err(`\npre-shared token (generated; set LINEUP_LAN_TOKEN to keep it across restarts — a flag would show in the process list):\n  ${token}`);
  err(`\nLAN URLs:\n${(ips.length ? ips : ["127.0.0.1"]).map((ip) => `  http://${ip}:${server.port}/`).join("\n")}`);
  err(
    `\nagent, on this machine (the line carries the agent token — a credential):\n  LINEUP_RELAY_URL=${local} LINEUP_SESSION=${created.session_id} LINEUP_TOKEN=${created.agent_token} lineup connect`,
  );
  err(`  (or just LINEUP_RELAY_URL=${local} lineup call … from ${process.cwd()}; in a clone without the package: npx lineup …)`);
  const link = links[0] ?? `${local}/${frag}`;
  printLink(link, !values["no-qr"]);
  for (const l of links.slice(1)) err(`  also: ${l}`);
  // One machine-readable line on stdout for scripts and tests.
  out(
    JSON.stringify({
      url: `http://${ips[0] ?? "127.0.0.1"}:${server.port}`,
      local_url: local,
      port: server.port,
      token,
      session_id: created.session_id,
      agent_token: created.agent_token,
      app_token: created.app_token,
      app_url: link,
    }),
  );
  return new Promise<number>((done) => {
    const stop = async () => {
      say("stopping");
      await server.close();
      done(0);
    };
    process.once("SIGINT", () => void stop());
    process.once("SIGTERM", () => void stop());
  });
}
