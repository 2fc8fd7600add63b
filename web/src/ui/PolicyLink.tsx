// The Settings entry of the permission policy: a card that opens the editor (Policy.tsx) in place. The
// editor and the policy engine it checks rules with are loaded only when opened.
import { useEffect, useState } from "preact/hooks";
import { pt } from "../tools/permission-i18n.js";

type Mod = typeof import("./Policy.js");
let loaded: Mod | undefined;

export function PolicyEntry() {
  const [open, setOpen] = useState(false);
  const [mod, setMod] = useState<Mod | undefined>(loaded);
  useEffect(() => {
    if (!open || mod) return;
    void import("./Policy.js").then((m) => {
      loaded = m;
      setMod(m);
    });
  }, [open, mod]);
  return (
    <div class="card policy-card">
      <h2 id="policy-h">{pt("policy")}</h2>
      <p class="hint">{pt("policyHelp")}</p>
      <button class="btn" type="button" aria-expanded={open} aria-controls="policy-editor" onClick={() => setOpen(!open)}>
        {open ? pt("policyClose") : pt("policyOpen")}
      </button>
      {open && <div id="policy-editor">{mod ? <mod.Policy /> : <p class="hint">{pt("loading")}</p>}</div>}
    </div>
  );
}
