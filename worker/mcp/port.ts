// The one thing `POST /mcp` needs from the session engine: an agent-role LineUp connection into a session's
// object. Everything else (calls, results, acks, cancels) is the ordinary LineUp v1 protocol on that socket,
// so the object can hibernate while the Worker holds the MCP client's stream.

export interface SessionLink {
  /**
   * Opens an agent-role LineUp connection into session `sid`'s object as internal caller `clientId`; resolves
   * when the socket is accepted (101). Rejects with a `LinkError` (`session_not_found` when the session is
   * gone, `link_failed` otherwise).
   */
  connect(sid: string, clientId: string): Promise<WebSocket>;
}

export class LinkError extends Error {
  constructor(
    readonly code: "session_not_found" | "link_failed",
    message: string,
  ) {
    super(message);
  }
}
