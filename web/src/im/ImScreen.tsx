// IM mode (issue 31, docs/wukongim.md "IM mode in the app"): the PWA as a WuKongIM client. Log in with a
// TangSengDaoDao account, see the conversations LineUp cards arrived in, and answer them with the same cards
// as in relay mode; an answer goes back as a content-type-10100 message that the relay's webhook judges.
// A lazily loaded chunk (app.tsx, route /im) with the SDK inside: none of it is in the initial bundle.
import { signal } from "@preact/signals";
import { useEffect, useState } from "preact/hooks";
import { LineUpError } from "../../../shared/client/errors.js";
import type { CallEntry } from "../calls.js";
import { draftAt } from "../draft.js";
import type { Answer } from "../tools/calculator.js";
import { CardBody } from "../ui/Cards.js";
import { ToolIcon } from "../ui/Icon.js";
import { headline, title } from "../ui/Settled.js";
import { type ImAccount, type ImConversation, login, logout, savedAccount, savedConversations, touchConversation } from "./account.js";
import { ImClient, type ImStatus } from "./client.js";
import { imT } from "./i18n.js";
import { type ImCard, ImThread } from "./thread.js";

const account = signal<ImAccount | undefined>(savedAccount());
const status = signal<ImStatus>("offline");
const conversations = signal<ImConversation[]>(savedConversations());
/** Bumped whenever a thread changed (threads are plain objects, the pure core). */
const version = signal(0);
const open = signal<ImConversation | undefined>(undefined);
const threads = new Map<string, ImThread>();
let client: ImClient | undefined;

const keyOf = (id: string, type: number) => `${type}:${id}`;

function threadOf(id: string, type: number): ImThread {
  const k = keyOf(id, type);
  let t = threads.get(k);
  if (!t) {
    // A person chat is with the relay's bot: its uid is the channel id.
    t = new ImThread(account.value?.uid ?? "", type === 1 ? id : undefined);
    threads.set(k, t);
  }
  return t;
}

function start(a: ImAccount): void {
  client?.close();
  client = new ImClient(a, {
    message(ch, m) {
      const t = threadOf(ch.id, ch.type);
      if (!t.add(m)) return;
      if (m.lineup !== undefined && !conversations.value.some((c) => c.channelId === ch.id && c.channelType === ch.type)) {
        conversations.value = touchConversation(ch.id, ch.type);
      }
      version.value++;
    },
    status(s) {
      status.value = s;
      // Every (re)connect catches up through history: what was sent while the socket was down is not re-sent
      // to it (WuKongIM keeps it for sync), and the thread drops what it already has (message id).
      if (s === "connected") syncAll();
    },
  });
  client.connect();
}

function syncAll(): void {
  for (const c of conversations.value) void client?.sync(c.channelId, c.channelType).catch(() => undefined);
}

function stop(): void {
  client?.close();
  client = undefined;
  threads.clear();
  logout();
  account.value = undefined;
  conversations.value = [];
  open.value = undefined;
  status.value = "offline";
}

function LoginForm() {
  const [server, setServer] = useState("");
  const [user, setUser] = useState("");
  const [pw, setPw] = useState("");
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErr("");
    try {
      const a = await login(server, user.trim(), pw);
      account.value = a;
      start(a);
    } catch (x) {
      setErr(x instanceof LineUpError ? x.message : String(x));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card im-login" onSubmit={(e) => void submit(e)}>
      <h2>{imT("loginTitle")}</h2>
      <p class="hint">{imT("loginHelp")}</p>
      <div class="field">
        <label for="im-server">{imT("server")}</label>
        <input
          id="im-server"
          type="url"
          inputMode="url"
          placeholder="https://im.example.com/api"
          required
          value={server}
          onInput={(e) => setServer((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for="im-user">{imT("username")}</label>
        <input id="im-user" type="text" autoComplete="username" required value={user} onInput={(e) => setUser((e.target as HTMLInputElement).value)} />
      </div>
      <div class="field">
        <label for="im-pw">{imT("password")}</label>
        <input id="im-pw" type="password" autoComplete="current-password" required value={pw} onInput={(e) => setPw((e.target as HTMLInputElement).value)} />
      </div>
      {err && (
        <p class="err" role="alert">
          {err}
        </p>
      )}
      <button class="btn primary" type="submit" disabled={busy}>
        {imT("login")}
      </button>
    </form>
  );
}

function entryOf(card: ImCard): CallEntry {
  const c = card.call;
  return { call_id: c.call_id, name: c.name, ...(c.action ? { action: c.action } : {}), args: c.arguments, deadline: c.deadline, at: 0, state: "pending" };
}

/** What a closed card says: who answered and what, or how it ended. */
function endLine(card: ImCard): string {
  const mine = card.mine?.result ? String(card.mine.result.message ?? "") : card.mine?.error ? imT("declined") : "";
  switch (card.state) {
    case "sent":
      return imT("sending", { a: mine });
    case "answered":
      return imT("answeredHere", { a: mine });
    case "elsewhere":
      return card.mine ? imT("lost") : imT("answeredElsewhere", { a: card.answerText ?? "", by: card.by ?? "" });
    case "timeout":
      return imT("timeout");
    case "cancelled":
      return imT("cancelled");
    default:
      return imT("gone");
  }
}

function ImCardView({ card, channel }: { card: ImCard; channel: ImConversation }) {
  // The card is the core's mutable object: same props after a change, and @preact/signals skips a component
  // whose props did not change, so the card reads the change counter itself.
  void version.value;
  const [busy, setBusy] = useState(false);
  const c = entryOf(card);
  const answer = (a: Answer) => {
    if (busy || card.state !== "pending" || !client) return;
    setBusy(true);
    const frame = { v: 1, kind: "tool.result", call_id: c.call_id, name: c.name, ...(c.action ? { action: c.action } : {}), ...a };
    void client
      .sendFrame(channel.channelId, channel.channelType, frame)
      .then((no) => {
        threadOf(channel.channelId, channel.channelType).answer(c.call_id, a, no);
        version.value++;
      })
      .finally(() => setBusy(false));
  };
  const q = headline(c);
  if (card.state !== "pending") {
    return (
      <article class="card settled" data-call={c.call_id} data-state={card.state} aria-labelledby={`h-${c.call_id}`}>
        <header>
          <ToolIcon name={c.name} />
          <span id={`h-${c.call_id}`}>{title(c)}</span>
        </header>
        {q && <p class="question">{q}</p>}
        <p class="im-end" role="status">
          {endLine(card)}
        </p>
      </article>
    );
  }
  return (
    <article class="card pending" data-call={c.call_id} data-state="pending" aria-labelledby={`h-${c.call_id}`}>
      <header>
        <ToolIcon name={c.name} />
        <span id={`h-${c.call_id}`}>{title(c)}</span>
      </header>
      {q && <p class="question">{q}</p>}
      <fieldset class="card-body" disabled={busy || status.value !== "connected"}>
        <CardBody c={c} answer={answer} draft={draftAt(`im-${channel.channelType}-${channel.channelId}`, false, c.call_id)} />
        <button class="btn link decline" type="button" onClick={() => answer({ error: { code: "declined", message: "the human declined" } })}>
          {imT("decline")}
        </button>
      </fieldset>
    </article>
  );
}

function Thread({ channel }: { channel: ImConversation }) {
  void version.value; // re-render on every thread change
  const t = threadOf(channel.channelId, channel.channelType);
  useEffect(() => {
    const id = setInterval(() => {
      t.expire(Date.now());
      version.value++;
    }, 5000);
    return () => clearInterval(id);
  }, [t]);
  return (
    <section class="im-thread" aria-label={channel.channelId}>
      <button class="btn link" type="button" onClick={() => (open.value = undefined)}>
        {imT("back")}
      </button>
      <h2>{channel.channelId}</h2>
      {t.view().map((r) => {
        if (r.kind === "text") {
          return (
            <p class={`im-text${r.mine ? " mine" : ""}`} key={r.id} data-from={r.fromUid}>
              <b>{r.fromUid}</b> {r.text}
            </p>
          );
        }
        const card = t.card(r.callId);
        return card ? <ImCardView key={r.callId} card={card} channel={channel} /> : null;
      })}
    </section>
  );
}

function Conversations() {
  void version.value;
  const list = conversations.value;
  return (
    <section class="card im-list">
      <h2>{imT("conversations")}</h2>
      {list.length === 0 ? <p class="hint">{imT("none")}</p> : null}
      <ul>
        {list.map((c) => {
          const waiting = threadOf(c.channelId, c.channelType)
            .view()
            .filter((r) => r.kind === "card" && threadOf(c.channelId, c.channelType).card(r.callId)?.state === "pending").length;
          return (
            <li key={keyOf(c.channelId, c.channelType)}>
              <button class="btn wide" type="button" onClick={() => (open.value = c)}>
                {c.channelId}
                {waiting > 0 ? ` · ${imT("waiting", { n: String(waiting) })}` : ""}
              </button>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

export function ImScreen() {
  const a = account.value;
  useEffect(() => {
    if (a && !client) start(a);
  }, [a]);
  if (!a) return <LoginForm />;
  const ch = open.value;
  return (
    <div class="im">
      <p class="hint im-who" role="status" data-status={status.value}>
        {imT("as", { name: a.name, uid: a.uid })} · {imT(`st_${status.value}`)}
      </p>
      {ch ? <Thread channel={ch} /> : <Conversations />}
      <button class="btn" type="button" onClick={stop}>
        {imT("logout")}
      </button>
    </div>
  );
}
