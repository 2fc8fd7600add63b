// The inbox's permission policy (docs/permissions.md): three lists of Claude Code rules — allow, ask,
// deny — that every agent machine of the inbox applies before asking the human. List, add (checked with
// the same parser the adapter uses), remove, save with the version it was read at (409: reload). With
// E2E on it is opened and saved sealed under the inbox's key (docs/e2e.md "The inbox policy").
import { useEffect, useState } from "preact/hooks";
import { validatePolicyFile } from "../../../shared/policy/index.js";
import type { SavedInbox } from "../storage.js";
import { pt, type PKey } from "../tools/permission-i18n.js";
import { getPolicy, policyInboxes, putPolicy, putSealedPolicy, type Lists } from "../tools/policy-api.js";
import type { InboxLink, PolicyView } from "../e2e/index.js";
import { e2eOf } from "../e2e-watch.js";
import { api } from "../inbox.js";
import { inboxes } from "../sessions.js";
import { Lock } from "./Icon.js";
import { pe } from "./policy-e2e-i18n.js";
import "../tools/permission.css";
import { LineUpError } from "../../../shared/client/errors.js";

const LISTS = ["deny", "ask", "allow"] as const;
type List = (typeof LISTS)[number];

/** Errors and warnings of one rule in one list, as the adapter would see it. */
export function checkRule(rule: string, list: List): { error?: string; warnings: string[] } {
  const v = validatePolicyFile({ permissions: { [list]: [rule] } });
  const strip = (m: string) => m.replace(/^permissions\.\w+\[0\]: /, "");
  return v.ok ? { warnings: v.warnings.map(strip) } : { error: v.errors.map(strip).join("; "), warnings: v.warnings.map(strip) };
}

function RuleList({ list, rules, onChange }: { list: List; rules: string[]; onChange: (next: string[]) => void }) {
  const [draft, setDraft] = useState("");
  const [err, setErr] = useState("");
  const [warn, setWarn] = useState<string[]>([]);
  const id = `policy-${list}`;
  const add = (e: Event) => {
    e.preventDefault();
    const rule = draft.trim();
    if (!rule) return;
    const c = checkRule(rule, list);
    if (c.error) {
      setErr(c.error);
      return;
    }
    setErr("");
    setWarn(c.warnings);
    if (!rules.includes(rule)) onChange([...rules, rule]);
    setDraft("");
  };
  return (
    <section class="policy-group" data-list={list} aria-labelledby={`${id}-h`}>
      <h3 id={`${id}-h`}>
        {pt(`list_${list}` as PKey)}
        <small>{pt(`list_${list}_help` as PKey)}</small>
      </h3>
      {rules.length === 0 ? (
        <p class="hint">{pt("noRules")}</p>
      ) : (
        <ul class="policy-list">
          {rules.map((r) => (
            <li key={r}>
              <code>{r}</code>
              <button class="icon" type="button" aria-label={pt("removeRule", { rule: r })} onClick={() => onChange(rules.filter((x) => x !== r))}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <form class="policy-add" onSubmit={add}>
        <label class="sr-only" for={`${id}-new`}>
          {pt("ruleLabel", { list: pt(`list_${list}` as PKey) })}
        </label>
        <input
          id={`${id}-new`}
          type="text"
          autoComplete="off"
          spellcheck={false}
          placeholder={pt("otherRulePlaceholder")}
          value={draft}
          onInput={(e) => setDraft((e.target as HTMLInputElement).value)}
        />
        <button class="btn" type="submit" disabled={!draft.trim()}>
          {pt("addRule")}
        </button>
      </form>
      {err && (
        <p class="err" role="alert">
          {pt("invalidRule", { e: err })}
        </p>
      )}
      {warn.map((w, i) => (
        <p class="policy-warn" key={i}>
          {pt("warning", { w })}
        </p>
      ))}
    </section>
  );
}

/** The inbox as a link for the E2E keyring (its live connection when there is one) and its key epoch. */
function linkOf(inbox: SavedInbox): { ib: InboxLink; epoch: number } {
  const conn = inboxes.value.find((x) => x.saved.origin === inbox.origin && x.saved.inbox_id === inbox.inbox_id);
  const ib: InboxLink = conn ?? {
    saved: inbox,
    request: <T,>(method: string, path: string, body?: unknown) => api<T>(inbox.origin, method, path, inbox.device_credential, body),
  };
  return { ib, epoch: e2eOf(conn?.state.value)?.epoch ?? 0 };
}

function Editor({ inbox }: { inbox: SavedInbox }) {
  const [lists, setLists] = useState<Lists | null>(null);
  const [version, setVersion] = useState(0);
  const [dirty, setDirty] = useState(false);
  const [msg, setMsg] = useState<{ text: string; error: boolean } | null>(null);
  const [busy, setBusy] = useState(false);
  // Issue 26: with E2E on (or a sealed policy) the lists are opened and saved sealed by the E2E chunk.
  const [view, setView] = useState<PolicyView | null>(null);
  const load = async (keepMsg = false, e2e = false) => {
    setBusy(true);
    try {
      const p = await getPolicy(inbox);
      const { ib, epoch } = linkOf(inbox);
      if (p.sealed || epoch > 0 || e2e) {
        const v = await (await import("../e2e/index.js")).openInboxPolicy(ib, p);
        setView(v);
        setLists(v.lists ?? null);
      } else {
        setView(null);
        setLists(p.permissions);
      }
      setVersion(p.version);
      setDirty(false);
      if (!keepMsg) setMsg(null);
    } catch (e) {
      setMsg({ text: pt("loadFailed", { e: e instanceof Error ? e.message : String(e) }), error: true });
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => void load(), [inbox.inbox_id, inbox.origin]);
  const save = async () => {
    if (!lists) return;
    setBusy(true);
    try {
      if (view) {
        const body = await (await import("../e2e/index.js")).sealInboxPolicy(linkOf(inbox).ib, lists, version);
        if (!body) {
          setMsg({ text: pe("noKeyToSave"), error: true });
          return;
        }
        const p = await putSealedPolicy(inbox, body);
        setView({ state: "sealed", lists, epoch: body.sealed.e });
        setVersion(p.version);
        setDirty(false);
        setMsg({ text: pe("sealedSaved", { v: p.version }), error: false });
        return;
      }
      const p = await putPolicy(inbox, lists, version);
      setLists(p.permissions);
      setVersion(p.version);
      setDirty(false);
      setMsg({ text: pt("saved", { v: p.version }), error: false });
    } catch (e) {
      if (e instanceof LineUpError && e.code === "e2e_on") {
        // The inbox turned E2E on after this screen read its state: read it again, sealed.
        setMsg({ text: e.message, error: true });
        await load(true, true);
      } else if (e instanceof LineUpError && e.status === 409) {
        setMsg({ text: pt("conflict"), error: true });
        await load(true);
      } else setMsg({ text: pt("saveFailed", { e: e instanceof Error ? e.message : String(e) }), error: true });
    } finally {
      setBusy(false);
    }
  };
  if (view && !view.lists) {
    // Sealed under a key this device lacks, or changed on the way: nothing to show, nothing to save over.
    return (
      <div class="policy" data-version={version} data-sealed={view.state}>
        <p class="err" role="alert">
          {pe(view.state, { e: view.epoch ?? 0 })}
        </p>
        <div class="policy-actions">
          <button class="btn" type="button" disabled={busy} onClick={() => void load()}>
            {pt("reload")}
          </button>
        </div>
      </div>
    );
  }
  if (!lists)
    return msg ? (
      <p class="err" role="alert">
        {msg.text}
      </p>
    ) : (
      <p class="hint">{pt("loading")}</p>
    );
  return (
    <div class="policy" data-version={version} {...(view ? { "data-sealed": view.state } : {})}>
      <p class="hint">
        {pt("version", { v: version })}
        {dirty ? ` · ${pt("unsaved")}` : ""}
      </p>
      {view && (
        <p class={view.state === "sealed" ? "hint policy-sealed" : "policy-warn"} role={view.state === "sealed" ? undefined : "status"}>
          <Lock sealed={view.state === "sealed"} /> {pe(view.state, { e: view.epoch ?? 0 })}
        </p>
      )}
      {LISTS.map((l) => (
        <RuleList
          key={l}
          list={l}
          rules={lists[l]}
          onChange={(next) => {
            setLists({ ...lists, [l]: next });
            setDirty(true);
            setMsg(null);
          }}
        />
      ))}
      {msg && (
        <p class={msg.error ? "err" : "hint"} role={msg.error ? "alert" : "status"}>
          {msg.text}
        </p>
      )}
      <div class="policy-actions">
        <button class="btn primary" type="button" disabled={(!dirty && !(view && view.state !== "sealed")) || busy} onClick={() => void save()}>
          {pt("save")}
        </button>
        <button class="btn" type="button" disabled={busy} onClick={() => void load()}>
          {pt("reload")}
        </button>
      </div>
    </div>
  );
}

export function Policy() {
  const inboxes = policyInboxes();
  const [sel, setSel] = useState(0);
  if (inboxes.length === 0) return <p class="hint">{pt("policyNoInbox")}</p>;
  const inbox = inboxes[Math.min(sel, inboxes.length - 1)]!;
  return (
    <div class="policy-screen">
      {inboxes.length > 1 && (
        <div class="field">
          <label for="policy-inbox">{pt("inboxLabel")}</label>
          <select id="policy-inbox" value={String(sel)} onChange={(e) => setSel(Number((e.target as HTMLSelectElement).value))}>
            {inboxes.map((x, i) => (
              <option key={x.inbox_id} value={String(i)}>{`${new URL(x.origin).host} · ${x.inbox_id}`}</option>
            ))}
          </select>
        </div>
      )}
      <Editor key={`${inbox.origin}/${inbox.inbox_id}`} inbox={inbox} />
    </div>
  );
}
