// Web Push's screens are loaded when first shown (the initial JavaScript budget, docs/pwa.md): the Settings
// card (push-settings.tsx) and the tool log's row (push-log.tsx), with their strings (push-i18n.ts).
import type { ComponentType } from "preact";
import { useEffect, useState } from "preact/hooks";

function lazy<P extends object>(load: () => Promise<ComponentType<P>>): ComponentType<P> {
  let loaded: ComponentType<P> | undefined;
  return function Lazy(props: P) {
    const [C, setC] = useState<ComponentType<P> | undefined>(() => loaded);
    useEffect(() => {
      if (C) return;
      void load().then((m) => {
        loaded = m;
        setC(() => m);
      });
    }, [C]);
    return C ? <C {...props} /> : null;
  };
}

export const PushEntry = lazy(() => import("./push-settings.js").then((m) => m.PushEntry));
export const PushRow = lazy(() => import("./push-log.js").then((m) => m.PushRow));
