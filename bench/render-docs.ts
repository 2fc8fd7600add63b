// Re-renders docs/benchmarks.md and docs/bench-latency.svg from bench/results.json (and the side files of
// the other modes) without re-running the bench (`npx tsx bench/render-docs.ts`), e.g. after editing the
// page's template in lib/render.ts.
import { readFileSync, writeFileSync } from "node:fs";
import { loadExtra, renderMarkdown, renderSvg } from "./lib/render.js";
import type { Results } from "./lib/results.js";

const r = JSON.parse(readFileSync("bench/results.json", "utf8")) as Results;
writeFileSync("docs/bench-latency.svg", renderSvg(r));
writeFileSync("docs/benchmarks.md", renderMarkdown(r, loadExtra()));
process.stderr.write("rendered docs/benchmarks.md and docs/bench-latency.svg from bench/results.json\n");
