// The docs/benchmarks.md section of `npm run bench -- --http-hook` (bench/lib/http-hook.ts, issue 29 item 6).
import { fmt, rr, type Extra } from "./render-common.js";
import { HTTP_HOOK_LABEL } from "./http-hook.js";

export function httpHookSection(x: Extra): string {
  const h = x.httpHook;
  if (!h) return "";
  const rows = (Object.keys(HTTP_HOOK_LABEL) as (keyof typeof HTTP_HOOK_LABEL)[])
    .map((w) => {
      const d = h.ways[w];
      return `| ${HTTP_HOOK_LABEL[w]} | ${fmt(d.p50)} | ${fmt(d.p95)} | ${fmt(d.min)}–${fmt(d.max)} |`;
    })
    .join("\n");
  return `## Claude Code's http hook against the command hook

_Measured by \`npm run bench -- --http-hook\` (bench/lib/http-hook.ts, also a step of \`npm run bench\`) on
${h.generated_at.slice(0, 16).replace("T", " ")} UTC, Node ${h.node}, ${h.runs} runs of each way in interleaved rounds (the order rotates each
round); 1-minute load ${h.load_avg_1m.join(" → ")}; raw figures in [bench/http-hook.json](../bench/http-hook.json)._

One tool call (\`Bash\` \`ls -la\`) answered \`allow\` by the same rule (\`Bash(ls *)\`): as a \`type: "http"\` hook
(\`lineup setup claude --http\`) it is one POST to the relay — here the real Worker in workerd (\`wrangler dev\`) on
this machine, over a fresh TCP connection each time, no TLS — which checks the machine credential and reads the
inbox policy; as a command hook it is a fresh \`node\` running the installed \`lineup-agent\`, answered from a project
\`.lineup/policy.json\` on disk. Wall time from the request (or spawn) to the complete answer.

| way | p50 ms | p95 ms | min–max ms |
|---|---:|---:|---:|
${rows}

The command hook takes ${rr(h.command_vs_http.pre_tool_use)} the http hook's time for PreToolUse and
${rr(h.command_vs_http.permission_request)} for PermissionRequest (median of the per-round ratios, spread); the machine's
load above is other jobs sharing its 2 CPUs, which slows a process start far more than a request to a running
relay, and both ways of a round ran under the same load. Against a
deployed relay the http hook adds the network: one round trip to the nearest Cloudflare location on a reused
connection, plus the TCP and TLS handshakes on a new one — while the command hook needs no network when the
policy on disk decides. A decision the policy leaves to the human is a held request on the relay either way.

`;
}
