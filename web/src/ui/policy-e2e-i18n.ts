// Strings of the policy screen for end-to-end encrypted inboxes (issue 26; docs/pwa.md), English and Chinese.
// Kept apart from permission-i18n.ts, which the initial bundle carries: only the lazy policy screen needs these.
import { lang } from "../i18n.js";
import type { PolicyState } from "../e2e/index.js";

const en: Record<PolicyState | "noKeyToSave" | "sealedSaved", string> = {
  sealed: "End-to-end encrypted: only your devices and agent machines can read or change this policy; the relay cannot.",
  older:
    "Sealed under an older key (from before a device was removed). Agents apply only its Ask and Deny rules until it is saved again: check the rules, then Save to seal them under the current key.",
  unsealed:
    "This inbox is end-to-end encrypted, but this copy of the policy is not sealed (it was stored before encryption was turned on, or the relay made it up). Agents apply only its Ask and Deny rules. Check every rule, then Save to seal them.",
  no_key:
    "This device does not hold the key this policy is sealed under (key epoch {e}). An agent machine seals it again under the current key the next time it reads it; reload then.",
  unreadable:
    "This copy of the policy does not open with the inbox's key: it was changed on the way. Agents ignore its rules. Reload, or ask an agent machine to write it again.",
  noKeyToSave: "This device holds no key of this inbox, so it cannot seal the policy. Pair it again (Devices → pair with a link from `lineup pair`).",
  sealedSaved: "Saved sealed (version {v}).",
};

const zh: typeof en = {
  sealed: "端到端加密：只有你的设备和 Agent 机器能读取或修改这份策略，中继服务器不能。",
  older: "这份策略是用旧密钥加密的（在移除某台设备之前）。重新保存前，Agent 只执行其中的“询问”和“拒绝”规则：请检查规则，然后点“保存”用当前密钥重新加密。",
  unsealed:
    "这个收件箱已启用端到端加密，但这份策略没有加密（它在启用加密之前保存，或者是中继服务器伪造的）。Agent 只执行其中的“询问”和“拒绝”规则。请逐条检查，然后点“保存”加密。",
  no_key: "本设备没有这份策略所用的密钥（密钥纪元 {e}）。Agent 机器下次读取时会用当前密钥重新加密，届时请重新加载。",
  unreadable: "这份策略无法用收件箱的密钥打开：它在传输中被改动过。Agent 会忽略其中的规则。请重新加载，或让 Agent 机器重新写入。",
  noKeyToSave: "本设备没有这个收件箱的密钥，无法加密策略。请重新配对（设备 → 用 `lineup pair` 生成的链接配对）。",
  sealedSaved: "已加密保存（版本 {v}）。",
};

export type PEKey = keyof typeof en;
const dicts = { en, zh } as const;

export function pe(key: PEKey, vars: Record<string, string | number> = {}): string {
  return dicts[lang.value][key].replace(/\{(\w+)\}/g, (_, k: string) => String(vars[k] ?? ""));
}
