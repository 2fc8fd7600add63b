// The one error class of the clients (issue 27 §5): a machine-readable `code` (a relay error code, a terminal
// close's name such as `session_ended`, or a client's own: `connect`, `auth`, `timeout`, `cancelled`, `e2e_*`)
// and a sentence for people. The adapter throws it; the PWA may too.
export class LineUpError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
    this.name = "LineUpError";
  }
}
