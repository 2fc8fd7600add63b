import { t } from "../i18n.js";

// Inline SVG icons (no icon font, no emoji: phones and kiosks without an emoji font still see them).
const PATHS = {
  clip: "M21.4 11.1l-9.2 9.2a6 6 0 01-8.5-8.5l9.2-9.2a4 4 0 015.7 5.7l-9.2 9.2a2 2 0 01-2.8-2.8l8.5-8.5",
  mic: "M12 2a3 3 0 00-3 3v7a3 3 0 006 0V5a3 3 0 00-3-3zM19 10v2a7 7 0 01-14 0v-2M12 19v3",
  stop: "M7 7h10v10H7z",
  send: "M22 2L11 13M22 2l-7 20-4-9-9-4 20-7z",
  file: "M14 2H6a2 2 0 00-2 2v16a2 2 0 002 2h12a2 2 0 002-2V8zM14 2v6h6",
  image: "M3 5h18v14H3zM3 16l5-5 4 4 3-3 6 6M15.5 9.5a1 1 0 100-.01",
  gear: "M12 15a3 3 0 100-6 3 3 0 000 6zM19.4 15a1.7 1.7 0 00.3 1.8l.1.1a2 2 0 11-2.8 2.8l-.1-.1a1.7 1.7 0 00-1.8-.3 1.7 1.7 0 00-1 1.5V21a2 2 0 11-4 0v-.1a1.7 1.7 0 00-1.1-1.5 1.7 1.7 0 00-1.8.3l-.1.1a2 2 0 11-2.8-2.8l.1-.1a1.7 1.7 0 00.3-1.8 1.7 1.7 0 00-1.5-1H3a2 2 0 110-4h.1a1.7 1.7 0 001.5-1.1 1.7 1.7 0 00-.3-1.8l-.1-.1a2 2 0 112.8-2.8l.1.1a1.7 1.7 0 001.8.3H9a1.7 1.7 0 001-1.5V3a2 2 0 114 0v.1a1.7 1.7 0 001 1.5 1.7 1.7 0 001.8-.3l.1-.1a2 2 0 112.8 2.8l-.1.1a1.7 1.7 0 00-.3 1.8V9a1.7 1.7 0 001.5 1H21a2 2 0 110 4h-.1a1.7 1.7 0 00-1.5 1z",
  back: "M15 18l-6-6 6-6",
  lock: "M5 11h14v10H5zM8 11V7a4 4 0 018 0v4",
  unlock: "M5 11h14v10H5zM8 11V7a4 4 0 017.7-1.5",
  // The tools' own icons (issue 28 §5: no glyph that a phone without the font shows as an empty box).
  choice: "M9 6h12M9 12h12M9 18h12M4 6h.01M4 12h.01M4 18h.01",
  confirm: "M20 6L9 17l-5-5",
  input: "M12 20h9M16.5 3.5a2.1 2.1 0 013 3L7 19l-4 1 1-4z",
  ask_question: "M21 15a2 2 0 01-2 2H7l-4 4V5a2 2 0 012-2h14a2 2 0 012 2z",
  permission: "M12 22s8-4 8-10V5l-8-3-8 3v7c0 6 8 10 8 10z",
} as const;

const isIcon = (n: string): n is IconName => Object.hasOwn(PATHS, n);
const TOOL_ICON: Record<string, IconName> = { work_report: "file", canvas: "image" };

/** A tool's icon on a card or a waiting row (the gear for a tool without its own). */
export function ToolIcon({ name }: { name: string }) {
  return (
    <span class="ico" aria-hidden="true">
      <Icon name={isIcon(name) ? name : (TOOL_ICON[name] ?? "gear")} size={18} />
    </span>
  );
}

export type IconName = keyof typeof PATHS;

/** Sealed (lock) or plaintext (open lock), with its accessible name: on every session row and card. */
export function Lock({ sealed, size = 16 }: { sealed: boolean; size?: number }) {
  const label = t(sealed ? "lockSealed" : "lockPlain");
  return (
    <span class={`lock ${sealed ? "sealed" : "plain"}`} role="img" aria-label={label} title={label} data-sealed={sealed ? "true" : "false"}>
      <Icon name={sealed ? "lock" : "unlock"} size={size} />
    </span>
  );
}

export function Icon({ name, size = 22 }: { name: IconName; size?: number }) {
  return (
    <svg
      class="i"
      width={size}
      height={size}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
      aria-hidden="true"
    >
      <path d={PATHS[name]} />
    </svg>
  );
}
