// Who a WebSocket is, as the edge checked it (shared/edge/app.ts) and hands it to the session: one typed value.
// Between the Worker's edge and the session object it travels in x-lineup-* headers that only the edge writes
// (a client's own are dropped) and the object parses once, here; the LAN server passes the value as it is.
import type { Role } from "../contract/protocol.js";

export interface SocketIdentity {
  role: Role;
  /** The session incarnation the token was issued for: another one refuses it (404). */
  epoch: number;
  /** The `client_id` asked for (checked by the session), or a paired device's own id; null: the relay picks one. */
  clientId: string | null;
  /** Answer the `lineup.v1` subprotocol (only when the client offered it). */
  subprotocol: boolean;
  /** The relay's own caller (remote MCP): may use a reserved `~` client id. Never set from a client's request. */
  internal?: boolean;
  /** A paired device's name (its connections use the device id as client id). */
  name?: string;
  /** `?register=first` (docs/protocol.md): not counted as a provider until it registers, so a call made before
   * then waits for its registration instead of being refused `unknown_tool`. */
  registerFirst?: boolean;
}

const H = {
  role: "x-lineup-role",
  epoch: "x-lineup-epoch",
  client: "x-lineup-client",
  subprotocol: "x-lineup-subprotocol",
  internal: "x-lineup-internal",
  name: "x-lineup-name",
  registerFirst: "x-lineup-register-first",
} as const;

/** The edge's side: `req` for the session object, carrying exactly `id` (every x-lineup-* header of the client's dropped). */
export function withIdentity(req: Request, id: SocketIdentity): Request {
  const headers = new Headers();
  req.headers.forEach((v, k) => {
    if (!k.startsWith("x-lineup-")) headers.set(k, v);
  });
  headers.set(H.role, id.role);
  headers.set(H.epoch, String(id.epoch));
  if (id.subprotocol) headers.set(H.subprotocol, "1");
  if (id.internal) headers.set(H.internal, "1");
  if (id.registerFirst) headers.set(H.registerFirst, "1");
  if (id.clientId !== null) headers.set(H.client, id.clientId);
  // Header values are bytes: a device's name (any Unicode) travels percent-encoded.
  if (id.name !== undefined) headers.set(H.name, encodeURIComponent(id.name));
  return new Request(req, { headers });
}

/** The session's side: the identity the edge wrote, parsed once; undefined when it is missing or malformed. */
export function identityOf(headers: Headers): SocketIdentity | undefined {
  const role = headers.get(H.role);
  const epoch = Number(headers.get(H.epoch) ?? Number.NaN);
  if ((role !== "agent" && role !== "app") || !Number.isSafeInteger(epoch)) return undefined;
  const id: SocketIdentity = { role, epoch, clientId: headers.get(H.client), subprotocol: headers.get(H.subprotocol) === "1" };
  if (headers.get(H.internal) === "1") id.internal = true;
  if (headers.get(H.registerFirst) === "1") id.registerFirst = true;
  const name = headers.get(H.name);
  if (name !== null) {
    try {
      id.name = decodeURIComponent(name);
    } catch {
      return undefined;
    }
  }
  return id;
}
