// The `permission` card as Cards.tsx mounts it: the real card (and the policy engine it uses to propose
// and check rules) is a separate chunk, loaded the first time a permission request arrives.
import { useEffect, useState } from "preact/hooks";
import type { CallEntry } from "../conn.js";
import type { Answer } from "./calculator.js";
import { pt } from "./permission-i18n.js";
import { ANSWERS } from "../../../shared/tools/meaning.js";

type Mod = typeof import("./permission.js");
let loaded: Mod | undefined;

export function PermissionCardLazy(p: { c: CallEntry; answer: (a: Answer) => void }) {
  const [mod, setMod] = useState<Mod | undefined>(loaded);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    if (mod) return;
    import("./permission.js")
      .then((m) => {
        loaded = m;
        setMod(m);
      })
      .catch(() => setFailed(true));
  }, [mod]);
  if (mod) return <mod.PermissionCard {...p} />;
  // Offline before the chunk was ever cached: plain Allow / Deny still work.
  return (
    <div class="options two" role="group">
      {!failed && <p class="hint">{pt("loading")}</p>}
      {failed && (
        <>
          <button class="btn primary" type="button" onClick={() => p.answer({ result: ANSWERS.allow() })}>
            {pt("allow")}
          </button>
          <button class="btn" type="button" onClick={() => p.answer({ result: ANSWERS.deny() })}>
            {pt("deny")}
          </button>
        </>
      )}
    </div>
  );
}
