// The tool log's "Notifications" row (issue 16): every push attempt the inbox recorded for one call —
// sent, not sent because the device was showing it, subscription gone, failed with the push service's status.
import { useEffect } from "preact/hooks";
import { loadPushInfo, pushLogs, type PushLogRow } from "./push.js";
import { pusht } from "./push-i18n.js";

const asked = new Map<string, number>();
/** At most one fetch of a session's log every 3 s, however many rows ask; once more a little later, since
 * a push goes out just after its call appears. */
function refresh(sid: string): void {
  const now = Date.now();
  if (now - (asked.get(sid) ?? 0) < 3_000) return;
  asked.set(sid, now);
  void loadPushInfo(sid);
  setTimeout(() => void loadPushInfo(sid), 3_000);
}

function line(e: PushLogRow): string {
  const what = e.outcome === "failed" ? pusht(e.retry_at ? "retrying" : "failed") : pusht(e.outcome);
  const kind = e.kind === "call" ? "" : ` (${pusht(e.kind)})`;
  const status = e.status ? ` ${e.status}` : e.error ? ` ${e.error}` : "";
  return `${e.device_name ?? e.device_id}: ${what}${status}${kind}`;
}

export function PushRow({ sid, callId, calls }: { sid: string; callId: string; calls: number }) {
  useEffect(() => refresh(sid), [sid, calls]);
  const rows = (pushLogs.value[sid] ?? []).filter((e) => e.call_id === callId);
  if (!rows.length) return null;
  return (
    <>
      <dt>{pusht("pushLog")}</dt>
      <dd class="push-log">
        {rows.map((e) => (
          <div key={`${e.at}-${e.device_id}-${e.kind}`}>{line(e)}</div>
        ))}
      </dd>
    </>
  );
}
