// End-to-end encryption core (issue 19; docs/e2e.md): WebCrypto only — ECDH P-256, HKDF-SHA-256,
// HMAC-SHA-256, AES-256-GCM — identical in Node 22, workerd and browsers. No imports outside this folder.
export * from "../bytes.js";
export * from "./errors.js";
export * from "./keys.js";
export * from "./envelope.js";
export * from "./wrap.js";
export * from "./pairing.js";
export * from "./rekey.js";
export * from "./frames.js";
export * from "./policy.js";
export * from "./guard.js";
