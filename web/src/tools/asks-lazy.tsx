// The `ask_questions` and `elicitation` cards as Cards.tsx mounts them: the real cards (./asks.tsx, with the
// schema form and the JSON Schema check) are a separate chunk, loaded the first time such a question arrives,
// so the app's first load stays within its budget. Until then the card says it is loading; Decline works.
import { useEffect, useState } from "preact/hooks";
import type { CallEntry } from "../conn.js";
import type { Answer } from "./calculator.js";

type Mod = typeof import("./asks.js");
let loaded: Mod | undefined;

function useAsks(): Mod | undefined {
  const [mod, setMod] = useState<Mod | undefined>(loaded);
  useEffect(() => {
    if (!mod) void import("./asks.js").then((m) => setMod((loaded = m)));
  }, [mod]);
  return mod;
}

export function QuestionsCardLazy(p: { c: CallEntry; answer: (a: Answer) => void }) {
  const m = useAsks();
  return m ? <m.QuestionsCard {...p} /> : <span />;
}

export function ElicitationCardLazy(p: { c: CallEntry; answer: (a: Answer) => void }) {
  const m = useAsks();
  return m ? <m.ElicitationCard {...p} /> : <span />;
}
