// `lineup daemon` (issue 29 item 4, branch i29-defer): resumes deferred headless Claude Code runs when their
// card is answered, for machines that do not keep a `lineup connect` open (adapter/permissions/resume.ts).
import { defaultStateDir } from "../client/state.js";
import { out, parse, say, str } from "./common.js";
import { HELP } from "./help.js";

export async function cmdDaemon(argv: string[]): Promise<number> {
  const { values } = parse(argv, {});
  if (values.help) return (out(HELP.daemon!), 0);
  const stateDir = str(values, "state-dir") ?? defaultStateDir();
  const { watchDeferred } = await import("../permissions/resume.js");
  say(`watching ${stateDir}/deferred for answered questions of headless Claude Code runs`);
  const stop = watchDeferred({ stateDir, log: say });
  return new Promise<number>((done) => {
    const finish = () => void stop().then(() => done(0));
    process.once("SIGINT", finish);
    process.once("SIGTERM", finish);
  });
}
