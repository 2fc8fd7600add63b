// Agent markdown as the app mounts it: the renderer and marked (./markdown-render.tsx, about 15 KB gzipped)
// are a separate chunk, outside the initial JavaScript budget (docs/pwa.md). main.tsx starts loading it once
// the sessions opened at start caught up (at most 3 s); until then (or offline before the chunk was ever
// cached) the text shows as written, wrapped, never as HTML.
import type { VNode } from "preact";
import { useEffect, useState } from "preact/hooks";

type Mod = typeof import("./markdown-render.js");
let loaded: Mod | undefined;
let loading: Promise<Mod> | undefined;
/** Cards mounted before the app first asked for the chunk: they wait for that ask (see Markdown). */
const waiting = new Set<() => void>();
/** The app asked for the chunk once: from then on a card loads it (again, after a failed load) itself. */
let asked = false;

/** Starts (once) loading the renderer chunk; a failed load may be retried by the next caller. */
export function loadMarkdown(): Promise<Mod> {
  asked = true;
  loading ??= import("./markdown-render.js").then(
    (m) => (loaded = m),
    (e: unknown) => {
      loading = undefined;
      throw e;
    },
  );
  const p = loading;
  const woken = [...waiting];
  waiting.clear();
  for (const w of woken) w();
  return p;
}

/**
 * Text as markdown once the renderer is loaded, as written until then. A card never starts the load by itself
 * before the app did (main.tsx: once the sessions opened at start caught up, at most 3 s): the cards of an
 * earlier visit, kept on this device, would load and run it while a waiting card is on its way (issue 33).
 */
export function Markdown({ text }: { text: string }): VNode {
  const [mod, setMod] = useState<Mod | undefined>(loaded);
  useEffect(() => {
    if (mod) return;
    const go = () => void loadMarkdown().then(setMod, () => undefined);
    if (asked) return go();
    waiting.add(go);
    return () => void waiting.delete(go);
  }, [mod]);
  if (mod) return <mod.Markdown text={text} />;
  return (
    <div class="md-wait">
      <p>{text}</p>
    </div>
  );
}
