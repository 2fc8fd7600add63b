// A canvas instance drawn as SVG: one <path> per stroke, exactly the agent's path data.
import type { SessionConn } from "../conn.js";
import { t } from "../i18n.js";

export function Board({ conn, id }: { conn: SessionConn; id: string }) {
  const b = conn.boards.value.find((x) => x.id === id);
  if (!b) return null;
  return (
    <figure class={`board${b.open ? "" : " closed"}`}>
      <svg viewBox={`0 0 ${b.width} ${b.height}`} role="img" aria-label={`${t("canvas")} ${b.id} ${b.width}×${b.height}`} data-instance={b.id}>
        <rect width={b.width} height={b.height} fill="#fff" />
        {b.strokes.map((s, i) => (
          <path
            key={i}
            d={s.d}
            stroke={s.color === "currentColor" ? "#111" : s.color}
            stroke-width={s.width}
            fill="none"
            stroke-linecap="round"
            stroke-linejoin="round"
          />
        ))}
      </svg>
      <figcaption>
        {b.width}×{b.height}
        {b.open ? "" : ` · ${t("closed")}`}
      </figcaption>
    </figure>
  );
}
