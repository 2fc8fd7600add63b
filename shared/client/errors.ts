// The one error class of the clients (issue 27 §5): a machine-readable `code` (a relay error code, a terminal
// close's name such as `session_ended`, or a client's own: `connect`, `auth`, `timeout`, `cancelled`, `e2e_*`,
// `bad_answer`, `lan_*`), a sentence for people (ready to show), and the HTTP `status` when an HTTP answer caused it
// (0: no answer — the relay could not be reached, or the failure is not about HTTP). The adapter, the PWA and the
// service worker throw only this.
export class LineUpError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, message: string, status = 0) {
    super(message);
    this.code = code;
    this.status = status;
    this.name = "LineUpError";
  }
}

export const isLineUpError = (e: unknown): e is LineUpError => e instanceof LineUpError;
