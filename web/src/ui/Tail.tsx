// Text that keeps its end when it does not fit ("…clients/api-server · laptop"): a path's start is what
// sessions share, its end is what tells them apart. Other text is cut at the end as usual.
const PATHLIKE = /[\\/]| · /;

export function TailText({ text, class: cls = "" }: { text: string; class?: string }) {
  if (!PATHLIKE.test(text)) return <span class={`clip ${cls}`.trim()}>{text}</span>;
  return (
    <span class={`clip tailclip ${cls}`.trim()} title={text}>
      <bdi>{text}</bdi>
    </span>
  );
}
