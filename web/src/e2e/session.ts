// A sealed session's crypto for its connection (web/src/conn.ts): opens every frame with the content key
// of its epoch, seals what this device sends, and validates opened arguments against the app's own tool
// schemas before anything is rendered (docs/e2e.md rule 2: validation moves to the receiver). The lazy
// `e2e` chunk: plaintext sessions never load it.
import { BUILTIN_TOOLS } from "../../../shared/contract/builtin-tools.js";
import { E2EError, openFrame, screenSealed, sealFrame, type Frame, type Screened } from "../../../shared/crypto/e2e/index.js";
import type { ToolDef } from "../../../shared/contract/protocol.js";
import { checkArguments } from "../../../shared/contract/schema.js";
import { keyringFor, type InboxLink, type Keyring } from "./keyring.js";

export interface SessionCrypto {
  /** True when this device holds a content key of the inbox. */
  readonly hasKey: boolean;
  /** Opens a frame from the relay (its sealed parts back in place); throws E2EError when it does not open. */
  open(f: Frame): Promise<Frame>;
  /** Seals a frame of this device under the newest key; throws when this device holds none. */
  seal(f: Frame): Promise<Frame>;
  /** `stale_epoch` or an envelope of an epoch we do not hold: fetch the key state again. */
  refresh(): Promise<void>;
  /** Plaintext content dropped, relay-made errors kept to end calls (shared/crypto/e2e/guard.ts, issue 26): in the
   * lazy chunk, so plaintext sessions never load it. */
  screen(f: Frame): Screened;
  /** Null when the arguments fit the tool's schema, else why not. */
  check(name: string, action: string | undefined, args: unknown, tools?: readonly ToolDef[]): string | null;
}

function schemaOf(tools: readonly ToolDef[], name: string, action: string | undefined): Record<string, unknown> | undefined {
  const def = tools.find((t) => t.name === name);
  if (!def) return undefined;
  if (def.type === "action") return def.inputSchema;
  return def.actions.find((a) => a.name === action)?.inputSchema;
}

export function checkCall(name: string, action: string | undefined, args: unknown, tools: readonly ToolDef[] = BUILTIN_TOOLS): string | null {
  if (typeof args !== "object" || args === null || Array.isArray(args)) return "(arguments): must be an object";
  const schema = schemaOf(tools, name, action);
  if (!schema) return null; // not one of ours: the relay already refused unknown tools
  const bad = checkArguments(schema, args);
  return bad ? `${name}${action ? "." + action : ""}: ${bad}` : null;
}

class Sealed implements SessionCrypto {
  constructor(
    private kr: Keyring | undefined,
    private readonly ib: InboxLink | undefined,
    private readonly sid: string,
    private readonly sender: string,
  ) {}

  get hasKey(): boolean {
    return !!this.kr?.current();
  }

  async open(f: Frame): Promise<Frame> {
    const kr = this.kr;
    if (!kr) {
      if (f.sealed === undefined && !(f.type === "tool.list" && Array.isArray(f.tools) && f.tools.some((t: { sealed?: unknown }) => t.sealed !== undefined)))
        return { ...f };
      throw new E2EError("wrong_epoch", "this device holds no key of the inbox");
    }
    try {
      return await openFrame(kr.keyOf, this.sid, f);
    } catch (e) {
      // An epoch newer than ours: a re-key happened; fetch our wrap once and try again.
      if (e instanceof E2EError && e.code === "wrong_epoch") {
        await this.refresh();
        return openFrame(kr.keyOf, this.sid, f);
      }
      throw e;
    }
  }

  async seal(f: Frame): Promise<Frame> {
    const ck = this.kr?.current();
    if (!ck) throw new E2EError("wrong_epoch", "this device holds no key of the inbox");
    return sealFrame(ck, { session_id: this.sid, sender: this.sender }, f);
  }

  async refresh(): Promise<void> {
    if (!this.kr && this.ib) this.kr = await keyringFor(this.ib);
    await this.kr?.refresh();
  }

  screen(f: Frame): Screened {
    return screenSealed(f);
  }

  check(name: string, action: string | undefined, args: unknown, tools?: readonly ToolDef[]): string | null {
    return checkCall(name, action, args, tools);
  }
}

/** The crypto of one sealed session; `ib` is undefined for a session not seen through an inbox. */
export async function sessionCrypto(ib: InboxLink | undefined, sid: string, clientId: string): Promise<SessionCrypto> {
  const kr = ib ? await keyringFor(ib).catch(() => undefined) : undefined;
  return new Sealed(kr, ib, sid, `app:${clientId}`);
}
