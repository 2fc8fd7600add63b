// Agent markdown as the app mounts it: the renderer and marked (./markdown-render.tsx, about 15 KB gzipped)
// are a separate chunk, outside the initial JavaScript budget (docs/pwa.md). main.tsx starts loading it as
// soon as the first screen is painted, so it is there before a session's cards arrive; until then (or
// offline before the chunk was ever cached) the text shows as written, wrapped, never as HTML.
import type { VNode } from "preact";
import { useEffect, useState } from "preact/hooks";

type Mod = typeof import("./markdown-render.js");
let loaded: Mod | undefined;
let loading: Promise<Mod> | undefined;

/** Starts (once) loading the renderer chunk; a failed load may be retried by the next caller. */
export function loadMarkdown(): Promise<Mod> {
  loading ??= import("./markdown-render.js").then(
    (m) => (loaded = m),
    (e: unknown) => {
      loading = undefined;
      throw e;
    },
  );
  return loading;
}

export function Markdown({ text }: { text: string }): VNode {
  const [mod, setMod] = useState<Mod | undefined>(loaded);
  useEffect(() => {
    if (!mod) loadMarkdown().then(setMod, () => undefined);
  }, [mod]);
  if (mod) return <mod.Markdown text={text} />;
  return (
    <div class="md-wait">
      <p>{text}</p>
    </div>
  );
}
