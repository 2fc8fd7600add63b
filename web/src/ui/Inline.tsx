// A UI sentence whose `backticks` name a command (`lineup pair`): shown as <code>, never as literal backticks
// (issue 28). Only that: the strings are the app's own, not markdown from an agent.
export function Inline({ text }: { text: string }) {
  return <>{text.split("`").map((p, i) => (i % 2 ? <code>{p}</code> : p))}</>;
}
