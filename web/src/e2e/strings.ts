// The E2E layer's strings (en + zh), in its lazy chunk: merged into web/src/i18n.ts when the chunk loads.
import { addStrings } from "../i18n.js";

const en = {
  cantOpen: "This could not be opened on this device: it was sealed for another call, or with a key this device does not hold. Nothing of it is shown.",
  cantOpenMsg: "A message that could not be opened on this device",
  elidedMsg: "An older message, too large to keep",
  e2ePairAgain:
    "End-to-end encryption is on and this device has no key (it was paired before encryption was turned on), so it cannot read sealed sessions. Pair it again: run `lineup pair` on the agent's computer and open the new link here.",
  e2eWaitingKey:
    "Paired as “{name}”. Last step: run `lineup e2e status` on the agent's computer (any `lineup` command does it) to hand this device the encryption key. Waiting…",
  e2ePaired: "Paired as “{name}” with end-to-end encryption. Comparison code: {code} — it should match the other screen.",
  e2eSponsored: "A device or machine received the key. Comparison code: {code}",
  e2eRekeyed: "New encryption key made: removed devices cannot read anything sent from now on.",
  // i28-home: a sealed thread starts empty after a reload (no copy is kept on the device).
  noMessagesSealed: "Nothing here on this device: an end-to-end encrypted session's earlier messages are not kept on it. New ones will appear here.",
};
const zh: typeof en = {
  cantOpen: "无法在本设备上打开：它是为另一个调用加密的，或所用的密钥本设备没有。不显示其任何内容。",
  cantOpenMsg: "一条无法在本设备上打开的消息",
  elidedMsg: "一条过大而未保留的旧消息",
  e2ePairAgain:
    "端到端加密已开启，而本设备没有密钥（它是在开启加密之前配对的），因此无法读取加密的会话。请重新配对：在 Agent 的电脑上运行 `lineup pair`，并在这里打开新链接。",
  e2eWaitingKey: "已配对，设备名“{name}”。最后一步：在 Agent 的电脑上运行 `lineup e2e status`（任意 `lineup` 命令都可以），把加密密钥交给本设备。正在等待…",
  e2ePaired: "已配对，设备名“{name}”，已启用端到端加密。比对码：{code}——应与另一块屏幕上的一致。",
  e2eSponsored: "一台设备或电脑已收到密钥。比对码：{code}",
  e2eRekeyed: "已生成新的加密密钥：被移除的设备无法读取此后发送的任何内容。",
  // i28-home
  noMessagesSealed: "本设备上没有内容：端到端加密会话之前的消息不会保存在本设备上。新的消息会显示在这里。",
};

export type E2EKey = keyof typeof en;
addStrings({ en, zh });
