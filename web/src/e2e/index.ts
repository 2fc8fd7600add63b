// The lazily loaded end-to-end chunk of the app (docs/pwa.md "End-to-end encryption"): one dynamic
// import for everything that needs the crypto or the schema validator, so plaintext users never pay for it.
import "./strings.js"; // its strings join the app's (web/src/i18n.ts) as soon as the chunk is there
export { checkCall } from "./session.js";
export { sealedCodec, type SealedCodec } from "./codec.js";
export { comparisons, hasKeys, joinPairing, keyringFor, resumeJoins, Keyring, type E2EState, type InboxLink } from "./keyring.js";
export { newPairingSecret, parsePairingFragment, isE2EError } from "../../../shared/crypto/e2e/index.js";
export { recordId, deleteKeys } from "./store.js";
export { openInboxPolicy, sealInboxPolicy, type PolicyState, type PolicyView } from "./policy.js";
