// The shape of bench/results.json (written by bench/run.ts, rendered by bench/lib/render.ts).
import type { Dist, RoundRatio } from "./stats.js";
import type { SystemName } from "./clients.js";
import type { CallCount } from "./count.js";

export interface Throughput {
  in_flight: number;
  seconds: number;
  calls: number;
  calls_per_s: number;
  /** calls/s in each interleaved round. */
  rounds: number[];
}

/** relay ÷ each baseline, once per interleaved round (latency: times slower; throughput: fraction of calls/s). */
export interface Ratios {
  vs_durable: RoundRatio;
  /** vs the durable floor plus the relay's two alarm writes per call. */
  vs_durable_alarm: RoundRatio;
  vs_do: RoundRatio;
  vs_node: RoundRatio;
}

export interface Scale {
  sessions: number;
  sockets: number;
  /** `POST /api/sessions` for all of them (relay only: a baseline room needs no creating). */
  create_sessions_ms: number | null;
  connect_all_ms: number;
  complete_all_ms: number;
  call_latency: Dist;
  workerd_rss_before_kib: number | null;
  workerd_rss_peak_kib: number | null;
  /** (peak − before) ÷ sessions: what one connected session (3 sockets, one call made) costs the process. */
  per_session_kib: number | null;
  workerd_hwm_kib: number | null;
  /** wrangler's own proxy workerd in front of the runtime (not part of the system). */
  proxy_rss_kib: number | null;
  errors: number;
}

export interface Cpu {
  /** CPU time (user + system, from /proc) of the runtime workerd over this system's throughput rounds. */
  cpu_ms: number | null;
  calls: number;
  us_per_call: number | null;
  /** The same for wrangler's proxy workerd in front of it (every frame crosses it; not the system's own). */
  proxy_us_per_call: number | null;
}

export interface Wake {
  /** First call after the idle time, ms, one per session. */
  first_ms: number[];
  /** Median of the warm calls made right after it on the same sockets, per session. */
  warm_ms: number[];
  /** first ÷ warm, per session. */
  ratio: number[];
  /** Baselines only: whether the object was constructed anew (evicted) while idle. */
  hibernated?: boolean[];
}

export interface Goal {
  goal: string;
  median: number;
  spread: [number, number];
  met: boolean;
}

export interface Results {
  generated_at: string;
  machine: { cpus: number; cpu_model: string; mem_gib: number; node: string; platform: string; wrangler: string };
  config: {
    latency_calls: number;
    latency_rounds: number;
    warmup_calls: number;
    throughput_in_flight: number;
    throughput_seconds: number;
    throughput_rounds: number;
    scale_sessions: number;
    scale_apps_per_session: number;
    relay_vars: Record<string, string>;
    /** X_LOCAL_OBSERVABILITY of every `wrangler dev` started (absent in runs before it was set: wrangler's default, on). */
    local_observability?: boolean;
  };
  latency: Record<SystemName, Dist>;
  /** Each system's p50 / p95 / p99 in each interleaved latency round, ms. */
  latency_rounds: Record<SystemName, { p50: number[]; p95: number[]; p99: number[] }>;
  throughput: Record<SystemName, Throughput>;
  ratios: {
    latency_p50: Ratios;
    latency_p95: Ratios;
    latency_p99: Ratios;
    throughput: Ratios;
  };
  /** What durability alone costs the platform: durable floor ÷ bare object, per round. */
  durable_vs_do: { latency_p50: RoundRatio; throughput: RoundRatio };
  /** What the relay's alarm writes alone cost the floor: (durable floor + alarm) ÷ durable floor. */
  alarm_vs_durable: { latency_p50: RoundRatio; throughput: RoundRatio };
  cpu: { relay: Cpu; durable: Cpu; durable_alarm: Cpu; do: Cpu; relay_vs_durable: number | null };
  /** SQLite statements, commits and alarm writes per event and per call (bench/lib/count.ts). */
  storage_per_call: CallCount;
  scale: { relay: Scale; durable: Scale; per_session_relay_vs_durable: number | null };
  wakeup: { idle_s: number; relay: Wake; durable: Wake; do: Wake; note: string };
  goals: { latency_p50_vs_durable: Goal; throughput_vs_durable: Goal; wakeup_vs_warm: Goal };
  agent_errors: Record<SystemName, number>;
  /** Rounds repeated on a new pair after a socket dropped (wrangler dev reloads the Worker on source changes). */
  reopened_after_drop: Record<SystemName, number>;
  /** 1-minute load average at the start and the end, and its range sampled every 5 s: other work skews figures. */
  load_avg_1m: { start: number; end: number; min: number; max: number; mean: number };
  total_s: number;
}
