// Text from the other side (an app's message, a status, a provider's error) printed for a human in a
// terminal: escape sequences in it could retitle the window, hide lines, rewrite what was shown or, on some
// terminals, write to the clipboard (OSC 52). They are removed; machine output (JSON) is never passed here.
// eslint-disable-next-line no-control-regex
const SEQUENCES = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[P^_X][^\x1b]*(?:\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[ -/]*[0-~]|\x9b[0-?]*[ -/]*[@-~]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

/** `s` without terminal escape sequences, C0/C1 controls (tab and newline stay) or bidi overrides. */
export function forTerminal(s: string): string {
  return s.replace(SEQUENCES, "").replace(CONTROLS, "");
}
