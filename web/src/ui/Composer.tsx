// Text plus attachments (files, photos, voice notes): the chat box and the reply box of ask_question /
// work_report share it.
import { useRef, useState } from "preact/hooks";
import type { ContentBlock } from "../../../shared/contract/protocol.js";
import { t } from "../i18n.js";
import { Icon } from "./Icon.js";
import { useDraft, type DraftAt } from "../draft.js";
import { MAX_ATTACH_BYTES, toAttachment, totalBytes, VoiceRecorder, type Attachment } from "../tools/attachments.js";

export interface ComposerProps {
  label: string;
  submitLabel: string;
  onSubmit: (text: string, content: ContentBlock[]) => void;
  /** Allow submitting with no text and no attachment (e.g. an empty reply is meaningful). */
  allowEmpty?: boolean;
  multiline?: boolean;
  idPrefix: string;
  extra?: preact.ComponentChildren;
  /** The submit button is the screen's main action (default) or a secondary one. */
  secondary?: boolean;
  /** Keep the typed text as a draft there (web/src/draft.ts) until it is sent. */
  draft?: DraftAt;
}

export function Composer(p: ComposerProps) {
  const [text, setText] = useDraft(p.draft);
  const [atts, setAtts] = useState<Attachment[]>([]);
  const [err, setErr] = useState("");
  const [rec, setRec] = useState<VoiceRecorder | null>(null);
  const fileRef = useRef<HTMLInputElement>(null);

  const add = async (files: FileList | null) => {
    if (!files) return;
    const next = [...atts];
    for (const f of Array.from(files)) next.push(await toAttachment(f, f.name));
    if (totalBytes(next) > MAX_ATTACH_BYTES) {
      setErr(t("tooBig", { n: Math.round(MAX_ATTACH_BYTES / 1024) }));
      return;
    }
    setErr("");
    setAtts(next);
    if (fileRef.current) fileRef.current.value = "";
  };

  const toggleRec = async () => {
    if (rec) {
      const blob = await rec.stop();
      setRec(null);
      const a = await toAttachment(blob, `voice-${new Date().toISOString().slice(11, 19).replace(/:/g, "")}.${blob.type.split("/")[1] ?? "webm"}`);
      if (totalBytes([...atts, a]) > MAX_ATTACH_BYTES) setErr(t("tooBig", { n: Math.round(MAX_ATTACH_BYTES / 1024) }));
      else setAtts([...atts, a]);
      return;
    }
    try {
      const r = new VoiceRecorder();
      await r.start();
      setRec(r);
      setErr("");
    } catch {
      setErr(t("micDenied"));
    }
  };

  const submit = (e: Event) => {
    e.preventDefault();
    const body = text.trim();
    if (!body && !atts.length && !p.allowEmpty) return;
    p.onSubmit(
      body,
      atts.map((a) => a.block),
    );
    setText("");
    setAtts([]);
  };

  const onKey = (e: KeyboardEvent) => {
    // Enter sends in the one-line chat box; Ctrl/Cmd+Enter sends from a multi-line reply.
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey || (!p.multiline && !e.shiftKey))) submit(e);
  };

  const tid = `${p.idPrefix}-text`;
  const textarea = (
    <textarea
      id={tid}
      rows={p.multiline ? 3 : 1}
      placeholder={p.label}
      value={text}
      onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      onKeyDown={onKey}
    />
  );
  return (
    <form class={`composer${p.multiline ? " multi" : ""}`} onSubmit={submit}>
      <label class="sr-only" for={tid}>
        {p.label}
      </label>
      {p.multiline && textarea}
      {atts.length > 0 && (
        <ul class="atts" aria-label={t("attach")}>
          {atts.map((a, i) => (
            <li key={i}>
              <Icon name={a.block.type === "image" ? "image" : a.block.type === "audio" ? "mic" : "file"} size={16} />
              <span>{a.name}</span>
              <button type="button" class="icon" aria-label={`${t("remove")} ${a.name}`} onClick={() => setAtts(atts.filter((_, j) => j !== i))}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <div class="row">
        <input
          ref={fileRef}
          id={`${p.idPrefix}-file`}
          class="sr-only"
          type="file"
          multiple
          tabIndex={-1}
          aria-hidden="true"
          onChange={(e) => void add((e.target as HTMLInputElement).files)}
        />
        <button type="button" class="btn ghost" aria-label={t("attach")} title={t("attach")} onClick={() => fileRef.current?.click()}>
          <Icon name="clip" />
        </button>
        {VoiceRecorder.supported() && (
          <button
            type="button"
            class={`btn ghost${rec ? " rec" : ""}`}
            aria-pressed={!!rec}
            aria-label={rec ? t("stopRec") : t("record")}
            title={rec ? t("stopRec") : t("record")}
            onClick={() => void toggleRec()}
          >
            <Icon name={rec ? "stop" : "mic"} />
            {rec && <span class="lbl">{t("recording")}</span>}
          </button>
        )}
        {!p.multiline && textarea}
        {p.extra}
        <button type="submit" class={`btn send${p.secondary ? "" : " primary"}`} aria-label={p.submitLabel}>
          {p.multiline ? p.submitLabel : <Icon name="send" />}
        </button>
      </div>
      {err && (
        <p class="err" role="alert">
          {err}
        </p>
      )}
    </form>
  );
}
