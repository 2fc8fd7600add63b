// The shape of bench/results.json (written by bench/run.ts, rendered by bench/lib/render.ts).
import type { Dist } from "./stats.js";
import type { SystemName } from "./clients.js";

export interface Throughput {
  in_flight: number;
  seconds: number;
  calls: number;
  calls_per_s: number;
}

export interface Results {
  generated_at: string;
  machine: { cpus: number; cpu_model: string; mem_gib: number; node: string; platform: string; wrangler: string };
  config: {
    latency_calls: number;
    warmup_calls: number;
    throughput_in_flight: number;
    throughput_seconds: number;
    scale_sessions: number;
    scale_apps_per_session: number;
    relay_vars: Record<string, string>;
  };
  latency: Record<SystemName, Dist>;
  throughput: Record<SystemName, Throughput>;
  ratios: {
    /** relay ÷ baseline: how many times slower (latency) or what fraction of the calls/s (throughput). */
    latency_p50: { vs_do: number; vs_node: number };
    latency_p95: { vs_do: number; vs_node: number };
    latency_p99: { vs_do: number; vs_node: number };
    throughput: { vs_do: number; vs_node: number };
  };
  scale: {
    sessions: number;
    sockets: number;
    create_sessions_ms: number;
    connect_all_ms: number;
    complete_all_ms: number;
    call_latency: Dist;
    workerd_rss_before_kib: number | null;
    workerd_rss_peak_kib: number | null;
    workerd_hwm_kib: number | null;
    /** wrangler's own proxy workerd in front of the runtime (not part of the relay). */
    proxy_rss_kib: number | null;
    errors: number;
  };
  wakeup: {
    idle_s: number;
    relay_ms: number[];
    do_ms: number[];
    do_hibernated: boolean[];
    steady_relay_p50_ms: number;
    note: string;
  };
  agent_errors: Record<SystemName, number>;
  /** Rounds repeated on a new pair after a socket dropped (wrangler dev reloads the Worker on source changes). */
  reopened_after_drop: Record<SystemName, number>;
  /** 1-minute load average when the bench started and ended: other work on the machine skews figures. */
  load_avg_1m: { start: number; end: number };
  total_s: number;
}
