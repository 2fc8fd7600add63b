// One error type for every refusal of the end-to-end layer, with a stable code callers can branch on
// (a relay never sees these: they happen on the holders' side).

export type E2EErrorCode =
  /** Not an envelope / wrap / pairing message of a version we know, or a field of the wrong shape. */
  | "bad_format"
  /** The envelope names another epoch than the key given (pick the key by `e`, or re-key first). */
  | "wrong_epoch"
  /** AES-GCM refused: wrong key, a changed associated-data field, nonce or ciphertext byte. */
  | "open_failed"
  /** A pairing MAC did not verify: wrong pairing secret, or a key was substituted on the way. */
  | "bad_mac"
  /** A wrapped key names a sender whose public key is not the one we trust for it. */
  | "untrusted_sender"
  /** A wrapped key is not for us (another holder id, inbox or epoch). */
  | "not_for_us";

export class E2EError extends Error {
  constructor(
    readonly code: E2EErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "E2EError";
  }
}

export const isE2EError = (e: unknown, code?: E2EErrorCode): e is E2EError => e instanceof E2EError && (code === undefined || e.code === code);
