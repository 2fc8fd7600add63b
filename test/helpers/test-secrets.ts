// Secrets of the servers tests start: the shared relay's TOKEN_SECRET (global-setup.ts) lets suites sign
// expired or tampered tokens exactly as the relay would.
export const TEST_TOKEN_SECRET = "test-token-secret-0123456789abcdef0123";
