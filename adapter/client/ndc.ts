// Issue 32 (docs/adapter.md "The direct path"): node-datachannel is an OPTIONAL dependency of the agent package,
// loaded with import() only when a device first offers a direct path (so a start-up, a hook or `lineup call`
// never pays for it). Without it (not installed: `--omit=optional`, or a platform with no prebuilt binary), or
// when its native part fails to load, the adapter runs relay-only and says so once per process, in one line.
import type { NdcModule } from "./direct.js";

/** The package's name (the import below spells it out, so the agent bundle keeps it an import). */
export const NDC_PACKAGE = "node-datachannel";

let loading: Promise<NdcModule | undefined> | undefined;

/** The library, or undefined (said once through `say`, default stderr). Later calls give the same answer. */
export function loadNdc(say: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<NdcModule | undefined> {
  loading ??= importNdc().then(
    (m) => m,
    (e: unknown) => {
      say(`lineup: direct path off, relay only: ${NDC_PACKAGE} did not load (${firstLine(e)}); it is an optional dependency`);
      return undefined;
    },
  );
  return loading;
}

async function importNdc(): Promise<NdcModule> {
  const lib: NdcModule = (await import("node-datachannel")).default;
  if (typeof lib?.PeerConnection !== "function") throw new Error("it has no PeerConnection");
  return lib;
}

const firstLine = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 200);

/** Tests only: forget the cached answer. */
export function resetNdcForTests(): void {
  loading = undefined;
}
