// Issue 33 (a phone that opens in a blink): the card of a waiting question, drawn by the early script
// (web/src/early.ts) from the early socket's `tool.call` before the app has started, and the hold that keeps the
// app from starting meanwhile. On a throttled phone the app's start (its script evaluating, its first render)
// ran while the session's socket was connecting and slowed the handshake (measured, docs/benchmarks.md): the
// question came after the app, then waited for the app's render. Now the app starts once this card was painted,
// once no such card is coming, or after HOLD_MAX_MS at the latest.
//
// Only a plaintext session's `ask_question` and `confirm` get a card here (EARLY_CARD_TOOLS): a question and a
// reply box, or a question and its two buttons, in the app's own classes. What is done on it is not sent from
// here: text typed is the card's draft (web/src/draft.ts, the key the app's card reads), and a Send or a button
// pressed is kept as an intent (takeEarlyIntent) that the app's card carries out when it shows — the same answer
// through the same path as a tap on the app's card. The card goes as soon as the app's card of the call is in
// the page (one `[data-call]` per call at any time), or EARLY_CARD_MAX_MS after the app started without it.
import { preferredLang, readJson, writeJson } from "./storage.js";

/** The tools whose card is drawn before the app starts. */
export const EARLY_CARD_TOOLS: ReadonlySet<string> = new Set(["ask_question", "confirm"]);
/** The app starts at the latest this long after the early dial, whatever the socket did. */
export const HOLD_MAX_MS = 800;
/** With no card to draw, the app starts this long after the registration went (the waiting call comes right after it). */
export const HOLD_NO_CALL_MS = 250;
/** An early card the app's card never replaced (the call closed, another screen) goes this long after the app started. */
export const EARLY_CARD_MAX_MS = 5_000;

/** The app's strings this card shows (web/src/i18n.ts, i18n-zh.ts; a unit test keeps them equal). */
export const EARLY_STRINGS = {
  en: { question: "Question", t_confirm: "Confirm", project: "Project", reply: "Your reply", send: "Send", yes: "Yes", no: "No" },
  zh: { question: "提问", t_confirm: "确认", project: "项目", reply: "你的回复", send: "发送", yes: "是", no: "否" },
} as const;

/** What was done on an early card: Send with the reply's text, or one of a confirm's buttons. */
export type EarlyIntent = { kind: "send"; text: string } | { kind: "yes" } | { kind: "no" };

/** A `tool.call` frame as the early card reads it. */
export interface EarlyCall {
  call_id: string;
  name: string;
  arguments: Record<string, unknown>;
}

declare global {
  /**
   * Shared by the early script and the app's copy of this module: the app starts when `hold` settles; `intents`
   * are what was done on early cards, by call id (taken once by the app's card).
   */
  var lineupEarlyUi: { hold?: Promise<void>; intents: Map<string, EarlyIntent> } | undefined;
}

const ui = (): NonNullable<typeof globalThis.lineupEarlyUi> => (globalThis.lineupEarlyUi ??= { intents: new Map() });

/** The hold the app waits for (main.tsx); settled when there is none. */
export const earlyHold = (): Promise<void> => ui().hold ?? Promise.resolve();

/** What was done on the early card of `callId`, once (the app's card carries it out). */
export function takeEarlyIntent(callId: string): EarlyIntent | undefined {
  const i = ui().intents.get(callId);
  ui().intents.delete(callId);
  return i;
}

/** A hold on the app's start: `free()` settles it (once); it frees itself after `maxMs`. */
export class EarlyHold {
  readonly done: Promise<void>;
  private release: () => void = () => undefined;
  private timers: ReturnType<typeof setTimeout>[] = [];
  freed = false;

  constructor(maxMs: number = HOLD_MAX_MS) {
    this.done = new Promise<void>((r) => (this.release = r));
    this.after(maxMs);
  }

  /** Frees the hold `ms` from now (unless it is freed before). */
  after(ms: number): void {
    if (!this.freed) this.timers.push(setTimeout(() => this.free(), ms));
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    this.release();
  }
}

const str = (v: unknown, fallback = ""): string => (typeof v === "string" && v ? v : fallback);

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The theme the app will show (web/src/ui/Settings.tsx applyTheme), set on the page before it starts. */
function themeOf(): void {
  const v = readJson<string | null>("theme", null);
  if (v === "light" || v === "dark") document.documentElement.dataset.theme = v;
}

/**
 * Draws the card of `call` (a tool of EARLY_CARD_TOOLS) of session `sid` before the app's root, and resolves once a
 * frame was painted with it. Removed when the app's card of the call shows (or by the returned `drop`). Undefined
 * when the page has no body or no app root yet (nothing is drawn).
 */
export function drawEarlyCard(call: EarlyCall, sid: string): { painted: Promise<void>; drop: () => void } | undefined {
  const app = document.getElementById("app");
  if (!document.body || !app) return undefined;
  const lang = preferredLang();
  const s = EARLY_STRINGS[lang];
  // The app's language and theme, as its start will set them (CJK glyphs, a dark page).
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  themeOf();
  const wrap = el("div", "early-card");
  const card = el("article", "card pending");
  card.dataset.call = call.call_id;
  const header = el("header");
  header.append(el("span", undefined, call.name === "confirm" ? s.t_confirm : s.question));
  card.append(header);
  const dir = str(call.arguments.project_directory);
  if (dir) {
    const p = el("p", "project");
    p.append(el("span", undefined, s.project), " ", el("code", undefined, dir));
    card.append(p);
  }
  card.append(el("p", "question", str(call.arguments.question)));
  const intend = (i: EarlyIntent, controls: (HTMLButtonElement | HTMLTextAreaElement)[]) => {
    ui().intents.set(call.call_id, i);
    for (const b of controls) {
      if (b instanceof HTMLTextAreaElement) b.readOnly = true;
      else b.disabled = true;
    }
  };
  if (call.name === "confirm") {
    const row = el("div", "options two");
    row.setAttribute("role", "group");
    const yes = el("button", "btn primary", str(call.arguments.yes_label, s.yes));
    const no = el("button", "btn", str(call.arguments.no_label, s.no));
    for (const [b, i] of [
      [yes, "yes"],
      [no, "no"],
    ] as const) {
      b.type = "button";
      b.addEventListener("click", () => intend({ kind: i }, [yes, no]));
    }
    row.append(yes, no);
    card.append(row);
  } else {
    const form = el("form", "composer multi");
    const box = el("textarea");
    box.rows = 3;
    box.placeholder = s.reply;
    box.setAttribute("aria-label", s.reply);
    // The app's card reads this draft (web/src/draft.ts: plaintext sessions keep drafts in localStorage).
    box.addEventListener("input", () => writeJson(`draft.${sid}.${call.call_id}`, box.value));
    const send = el("button", "btn primary", s.send);
    send.type = "submit";
    const row = el("div", "row");
    row.append(send);
    form.append(box, row);
    const submit = () => {
      const text = box.value.trim();
      if (text && !box.readOnly) intend({ kind: "send", text }, [send, box]);
    };
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      submit();
    });
    // Ctrl/Cmd+Enter sends, as from the app's reply box (web/src/ui/Composer.tsx).
    box.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" || !(e.ctrlKey || e.metaKey)) return;
      e.preventDefault();
      submit();
    });
    card.append(form);
  }
  wrap.append(card);
  document.body.insertBefore(wrap, app);
  let dropped = false;
  const drop = (replacement?: Element) => {
    if (dropped) return;
    dropped = true;
    mo.disconnect();
    // Typing goes on in the app's card: the focus moves to its reply box (the text typed so far is its draft).
    const focused = document.activeElement instanceof HTMLElement && wrap.contains(document.activeElement) ? document.activeElement : undefined;
    wrap.remove();
    if (!focused || !replacement) return;
    const sel = focused instanceof HTMLTextAreaElement ? "textarea" : "button";
    const move = () => {
      const to = replacement.querySelector<HTMLTextAreaElement | HTMLButtonElement>(sel);
      // Not once the person (or the app) put the focus somewhere else.
      if (!to || (document.activeElement !== document.body && document.activeElement !== null)) return !!to;
      to.focus();
      if (to instanceof HTMLTextAreaElement) to.setSelectionRange(to.value.length, to.value.length);
      return true;
    };
    // The app's card may render its controls a frame later (a lazy body): tried again for up to 1 s.
    if (!move()) {
      const until = Date.now() + 1000;
      const again = () => !move() && Date.now() < until && requestAnimationFrame(again);
      requestAnimationFrame(again);
    }
  };
  // One card per call in the page: the early one goes in the same task the app's card (an article: not the home
  // screen's row of the same call, which the app may show a moment first) appears.
  const mo = new MutationObserver(() => {
    const theirs = app?.querySelector(`article[data-call="${CSS.escape(call.call_id)}"]`);
    if (theirs) drop(theirs);
  });
  mo.observe(app, { childList: true, subtree: true });
  const painted = new Promise<void>((r) =>
    requestAnimationFrame(() => {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => r();
      ch.port2.postMessage(0);
    }),
  );
  return { painted, drop: () => drop() };
}

/** The early socket as the hold watches it (web/src/early.ts EarlySocket). */
export interface WatchedSocket {
  readonly ws: { addEventListener(type: "message" | "close" | "error", l: (ev: { data?: unknown }) => void): void };
  /** Settles true once its `hello` said plaintext and this device has not pinned the session sealed; undefined before the `hello`. */
  readonly plain: Promise<boolean> | undefined;
  readonly isTaken: boolean;
}

/**
 * Holds the app's start for the early socket of session `sid` (set as `lineupEarlyUi.hold`) and draws the cards of
 * the waiting questions it is handed before the app starts (EARLY_CARD_TOOLS, a plaintext session not pinned
 * sealed: a sealed session's calls are never shown here, whatever the relay sends). The hold is freed when the first
 * card was painted, by a call no early card shows, by the socket's end, or HOLD_NO_CALL_MS after the registration
 * went. Returns what the registration's outcome is told (EarlyRegistration.decided). `draw`: a stub in unit tests.
 */
export function holdForCard(e: WatchedSocket, sid: string, hold: EarlyHold, draw: typeof drawEarlyCard = drawEarlyCard): (sent: boolean) => void {
  ui().hold = hold.done;
  const drawn = new Map<string, { drop: () => void }>();
  const show = (call: EarlyCall) => {
    if (hold.freed || e.isTaken || drawn.has(call.call_id)) return;
    const d = draw(call, sid);
    if (!d) return hold.free();
    drawn.set(call.call_id, {
      drop: () => {
        drawn.delete(call.call_id);
        d.drop();
      },
    });
    // The app starts a task after the paint: what else waits for that frame (an input, a paint's own follow-up) goes first.
    const free = () => setTimeout(() => hold.free(), 0);
    d.painted.then(free, free);
  };
  e.ws.addEventListener("message", (ev) => {
    // Once the app started and no early card is left, frames are the app's alone (none parsed twice).
    if (hold.freed && drawn.size === 0) return;
    let f: { type?: unknown; call_id?: unknown; name?: unknown; arguments?: unknown } | null;
    try {
      f = JSON.parse(String(ev.data)) as typeof f;
    } catch {
      return;
    }
    if (f?.type === "tool.cancel" && typeof f.call_id === "string") {
      // Its card goes, and what was pressed on it with it (a call sent again is asked again).
      drawn.get(f.call_id)?.drop();
      ui().intents.delete(f.call_id);
    }
    if (f?.type !== "tool.call" || hold.freed) return;
    const { call_id, name, arguments: args } = f;
    // A call the early card cannot show: the app starts now and shows it.
    if (typeof call_id !== "string" || typeof name !== "string" || !EARLY_CARD_TOOLS.has(name) || !args || typeof args !== "object" || !e.plain)
      return hold.free();
    const call = { call_id, name, arguments: args as Record<string, unknown> };
    e.plain.then(
      (plain) => (plain ? show(call) : hold.free()),
      () => hold.free(),
    );
  });
  for (const kind of ["close", "error"] as const) e.ws.addEventListener(kind, () => hold.free());
  // The app started: a card it never replaced goes in a while.
  hold.done.then(() => setTimeout(() => [...drawn.values()].forEach((d) => d.drop()), EARLY_CARD_MAX_MS));
  return (sent) => (sent ? hold.after(HOLD_NO_CALL_MS) : hold.free());
}
