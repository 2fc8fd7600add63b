// The shape of bench/direct.json and the labels of its two ways (bench/lib/direct.ts measures, render-direct.ts
// draws; kept apart so rendering the page loads no node-datachannel).
import type { RoundRatio } from "./stats.js";

export type Way = "relay" | "direct";
export const DIRECT_LABEL: Record<Way, string> = {
  relay: "via the relay (agent → relay → device → relay → agent)",
  direct: "direct (a WebRTC data channel on loopback; the answer also goes to the relay)",
};

export interface DirectResults {
  generated_at: string;
  node: string;
  rounds: number;
  calls_per_round: number;
  load_avg_1m: number[];
  ways: Record<Way, { p50: number; p95: number; min: number; max: number }>;
  /** Per round: the relay's median round trip ÷ the direct path's. */
  relay_vs_direct: RoundRatio;
}
