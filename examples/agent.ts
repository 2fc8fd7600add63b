// An example agent: connects out to the relay (works behind NAT), shows the human a link, hosts one
// tool of its own, and asks the human through the app's built-in tools.
//
//   npm run dev                      # terminal 1: the local relay on http://127.0.0.1:8787
//   npx tsx examples/agent.ts        # terminal 2: open the printed link on your phone
//
// Environment: LINEUP_RELAY_URL, LINEUP_RELAY_KEY, LINEUP_SESSION + LINEUP_TOKEN, LINEUP_STATE_DIR
// (see docs/adapter.md). Set EXAMPLE_TIMEOUT_S to bound how long the human has (default 600 s).
import { connectAgent, LineUpError } from "../adapter/client/index.js";

const timeoutS = Number(process.env.EXAMPLE_TIMEOUT_S ?? 600);
const agent = await connectAgent({ log: (line) => console.error(`[lineup] ${line}`) });
console.error(`session ${agent.sessionId}`);
if (agent.appUrl) console.error(`open on your phone: ${agent.appUrl}`);

// A tool the agent hosts: the app (or anything on the human side) may call it.
agent.provide(
  {
    name: "disk_usage",
    type: "action",
    description: "How much memory this agent process uses",
    inputSchema: { type: "object", properties: {} },
  },
  () => {
    const mb = Math.round(process.memoryUsage().rss / 1e6);
    return { message: `${mb} MB resident`, rss_mb: mb };
  },
);

agent.on("presence", (p) => console.error(`[lineup] ${p.apps} app(s) connected`));
agent.on("message", (m) => console.error(`[lineup] human says: ${m.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(" ")}`));

try {
  agent.setStatus("waiting", "asking before deploying");
  const confirm = await agent.call("confirm", undefined, { question: "Deploy the build to staging?", yes_label: "Deploy", no_label: "Not now" }, { timeoutS });
  if (confirm.confirmed === true) {
    agent.setStatus("working", "deploying");
    const pick = await agent.call("choice", undefined, { question: "Which region?", options: ["eu-west", "us-east", "ap-south"] }, { timeoutS });
    agent.send(`Deploying to ${pick.message}. I will report back.`);
    console.log(JSON.stringify({ deployed: true, region: pick.message }));
  } else {
    agent.send("OK, not deploying.");
    console.log(JSON.stringify({ deployed: false }));
  }
  agent.setStatus("idle");
} catch (e) {
  // Error results carry the relay's or the human's code: timeout, declined, unknown_tool, …
  const code = e instanceof LineUpError ? e.code : "internal";
  console.log(JSON.stringify({ error: code, message: (e as Error).message }));
  process.exitCode = 1;
} finally {
  await agent.close();
}
