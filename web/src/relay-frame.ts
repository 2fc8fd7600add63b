// A JSON frame from the relay (shared/client/socket.ts hands them over unchecked) as one of the protocol's
// relay → client frames (shared/contract/protocol.ts RelayFrame). The relay's frames have no zod schema on this
// side (the app would pay for it in its initial bundle): each type is checked for the fields the connection
// reads (web/src/conn.ts), and a frame missing them is not handed on.
import type { RelayFrame } from "../../shared/contract/protocol.js";

type Json = Record<string, unknown>;
const obj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === "string";

export function isRelayFrame(f: Json): f is Json & RelayFrame {
  switch (f.type) {
    case "hello":
      return obj(f.peers);
    case "presence":
      return obj(f.agent) && typeof f.apps === "number";
    case "tool.list":
      return Array.isArray(f.tools);
    case "tool.call":
      return str(f.call_id) && str(f.name);
    case "tool.cancel":
    case "tool.result":
      return str(f.call_id);
    case "error":
      return str(f.code);
    case "message":
      return str(f.id) && obj(f.from);
    default:
      return false;
  }
}
