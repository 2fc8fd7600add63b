// Small socket helpers. `send()` after close throws, and `close()` with 1005/1006 (reserved codes that
// only describe a missing or abnormal close) throws too — so both are wrapped once, here.

export function sendIfOpen(ws: WebSocket, data: string): boolean {
  if (ws.readyState !== WebSocket.OPEN) return false;
  try {
    ws.send(data);
    return true;
  } catch {
    return false;
  }
}

export function closeQuietly(ws: WebSocket, code: number, reason: string): void {
  const safe = code === 1005 || code === 1006 || code === 1015 || code < 1000 || code > 4999 ? 1000 : code;
  try {
    ws.close(safe, reason.slice(0, 120));
  } catch {
    /* already closed */
  }
}
