// IM mode's WuKongIM client (issue 31): the official JS SDK `wukongimjssdk` 1.0.4 (why the SDK and not
// JSON-RPC: docs/wukongim.md "Client: the official JS SDK"). This module is only ever reached through the lazily
// loaded IM screen (web/src/im/ImScreen.tsx), so nothing of the SDK is in the initial bundle. A thin host:
// SDK messages in → `ImMsg` out (im/thread.ts decides), answers out as content-type-10100 messages. The SDK
// itself pings (heartbeat), reconnects every 3 s after a drop, and re-sends un-acked SENDs after each CONNACK
// with the same client_msg_no (the relay judges by call_id, the thread de-duplicates by message id).
// Two SDK bugs are worked around here (docs/wukongim.md "Known SDK bugs"): a refused token gets no CONNACK
// and would reconnect forever, so no CONNACK within CONNACK_WAIT_MS is a failed login; and `disconnect()`
// during a pending reconnect leaves `lockReconnect` set, so it is cleared before every `connect()`.
import WKSDK from "wukongimjssdk";
import { ConnectStatus } from "wukongimjssdk/lib/connect_manager";
import { Channel, Message, MessageContent, MessageText, type SyncOptions } from "wukongimjssdk/lib/sdk";
import { IM_LINEUP_TYPE, TsddSync, TsddSyncMessage } from "../../../shared/contract/im-card.js";
import type { ImAccount } from "./account.js";
import type { ImMsg } from "./thread.js";

/** How long a CONNECT may wait for its CONNACK before the login counts as refused (WuKongIM v2.2.5 sends none to a bad token). */
export const CONNACK_WAIT_MS = 6000;
/** Messages fetched per history sync. */
export const HISTORY_LIMIT = 100;

/** A LineUp frame as an SDK content type (type 10100): the payload's keys are the frame's. */
class LineUpContent extends MessageContent {
  frame: Record<string, unknown> = {};
  constructor(frame?: Record<string, unknown>) {
    super();
    if (frame) this.frame = frame;
  }
  override get contentType(): number {
    return IM_LINEUP_TYPE;
  }
  override decodeJSON(content: Record<string, unknown>): void {
    this.frame = content;
  }
  override encodeJSON(): Record<string, unknown> {
    return { ...this.frame };
  }
}

export type ImStatus = "connecting" | "connected" | "offline" | "refused" | "kicked";

export interface ImHandlers {
  message(channel: { id: string; type: number }, m: ImMsg): void;
  status(s: ImStatus): void;
}

const sdk = WKSDK.shared();
let registered = false;

function toImMsg(m: Message): ImMsg {
  const id = m.messageID && m.messageID !== "0" ? String(m.messageID) : "";
  const base = { id, clientMsgNo: m.clientMsgNo, fromUid: m.fromUID, seq: m.messageSeq || 0, timestamp: m.timestamp };
  if (m.content instanceof LineUpContent) return { ...base, lineup: m.content.frame };
  if (m.content instanceof MessageText) return { ...base, text: m.content.text ?? "" };
  return base;
}

/** One TSDD history message as the SDK's `Message` (what `syncMessagesCallback` must return). */
function fromHistory(h: TsddSyncMessage): Message {
  const content = sdk.getMessageContent(typeof h.payload.type === "number" ? h.payload.type : 0);
  content.decode(new TextEncoder().encode(JSON.stringify(h.payload)));
  const m = new Message();
  m.messageID = h.message_idstr;
  m.clientMsgNo = h.client_msg_no;
  m.messageSeq = h.message_seq;
  m.fromUID = h.from_uid;
  m.channel = new Channel(h.channel_id, h.channel_type);
  m.timestamp = h.timestamp;
  m.content = content;
  return m;
}

export class ImClient {
  private connackTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly onMessage = (m: Message) => {
    // Person chat: the SDK names the other party as the channel, for RECVs and for our own sends alike.
    this.h.message({ id: m.channel.channelID, type: m.channel.channelType }, toImMsg(m));
  };
  private readonly onStatus = (s: ConnectStatus, reason?: number) => {
    if (s === ConnectStatus.Connected) {
      clearTimeout(this.connackTimer);
      this.h.status("connected");
    } else if (s === ConnectStatus.ConnectKick) this.h.status("kicked");
    else if (s === ConnectStatus.Connecting) this.h.status("connecting");
    else if (s === ConnectStatus.Disconnect || s === ConnectStatus.ConnectFail) this.h.status(reason === 2 ? "refused" : "offline");
  };

  constructor(
    private readonly account: ImAccount,
    private readonly h: ImHandlers,
  ) {
    if (!registered) {
      sdk.register(IM_LINEUP_TYPE, () => new LineUpContent());
      registered = true;
    }
    sdk.config.addr = account.addr;
    sdk.config.uid = account.uid;
    sdk.config.token = account.token;
    sdk.config.deviceFlag = 1; // web
    sdk.config.provider.syncMessagesCallback = (channel, opts) => this.history(channel, opts);
    sdk.chatManager.addMessageListener(this.onMessage);
    sdk.connectManager.addConnectStatusListener(this.onStatus);
  }

  connect(): void {
    // SDK bug: a disconnect() during a pending reconnect leaves lockReconnect set, and no later drop reconnects.
    sdk.connectManager.lockReconnect = false;
    this.h.status("connecting");
    sdk.connect();
    clearTimeout(this.connackTimer);
    // SDK bug: WuKongIM v2.2.5 answers a wrong token with no CONNACK and the SDK would retry every 3 s forever.
    this.connackTimer = setTimeout(() => {
      if (sdk.connectManager.status === ConnectStatus.Connected) return;
      sdk.disconnect();
      this.h.status("refused");
    }, CONNACK_WAIT_MS);
  }

  /** Stops for good (log out, or the screen closes): no reconnect, listeners removed. */
  close(): void {
    clearTimeout(this.connackTimer);
    sdk.chatManager.removeMessageListener(this.onMessage);
    sdk.connectManager.removeConnectStatusListener(this.onStatus);
    sdk.disconnect();
  }

  /** History of a conversation through the SDK's sync hook; messages go to the same handler as live ones. */
  async sync(channelId: string, channelType: number): Promise<void> {
    const channel = new Channel(channelId, channelType);
    const list = await sdk.chatManager.syncMessages(channel, { startMessageSeq: 0, endMessageSeq: 0, limit: HISTORY_LIMIT, pullMode: 1 });
    // TSDD names the conversation as seen by the logged-in user; the thread is the one asked for.
    for (const m of list) this.h.message({ id: channelId, type: channelType }, toImMsg(m));
  }

  /** Sends a LineUp frame (type 10100) into a conversation; returns its client_msg_no (the SDK re-sends it with this same number). */
  async sendFrame(channelId: string, channelType: number, frame: Record<string, unknown>): Promise<string> {
    const m = await sdk.chatManager.send(new LineUpContent(frame), new Channel(channelId, channelType));
    return m.clientMsgNo;
  }

  /** TSDD's `POST /v1/message/channel/sync` (modules/message/api.go syncChannelMessage), parsed at the edge. */
  private async history(channel: Channel, opts: SyncOptions): Promise<Message[]> {
    const r = await fetch(`${this.account.server}/v1/message/channel/sync`, {
      method: "POST",
      headers: { "content-type": "application/json", token: this.account.token },
      body: JSON.stringify({
        channel_id: channel.channelID,
        channel_type: channel.channelType,
        start_message_seq: opts.startMessageSeq,
        end_message_seq: opts.endMessageSeq,
        limit: opts.limit,
        pull_mode: opts.pullMode,
      }),
      signal: AbortSignal.timeout(15_000),
    });
    const body = TsddSync.safeParse(await r.json().catch(() => undefined));
    if (!r.ok || !body.success) return [];
    return body.data.messages.flatMap((raw) => {
      const h = TsddSyncMessage.safeParse(raw);
      return h.success ? [fromHistory(h.data)] : [];
    });
  }
}
