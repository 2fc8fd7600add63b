// A plain text reply naming a LineUp call by its short code ("#K3F7 2", "@lineup_bot ＃k3f7：预发布"): one reader
// for the relay's WuKongIM bridge (worker/wukongim/text.ts) and the PWA's IM mode (web/src/im/thread.ts), so the
// card shows "answered elsewhere" for exactly the replies the relay took as answers. Pure, no I/O.

/**
 * A reply naming a code: optional leading @-mentions (group chats), `#` or the full-width `＃`, the code
 * (any case), then the answer. Returns undefined for text that does not start with a code.
 */
export function parseCodeReply(text: string): { code: string; answer: string } | undefined {
  const m = /^\s*(?:@\S+\s+)*[#＃]([A-Za-z0-9]{3,8})(?![A-Za-z0-9])[\s:：,，.。]*([\s\S]*)$/.exec(text);
  if (!m) return undefined;
  return { code: m[1]!.toUpperCase(), answer: m[2]!.trim() };
}
