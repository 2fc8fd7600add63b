// zod for every schema of ours, set up once: `jitless`, so zod never tries `new Function` to compile a fast
// parser. The app's Content-Security-Policy forbids eval: zod's probe for it was reported as a `script-src`
// violation whenever the first object schema was built in the page (test/browser/browser-content.test.ts), and
// Workers forbid code generation too. Every module that builds a schema imports `z` from here, so this runs first.
import { z } from "zod";

z.config({ jitless: true });

export { z };
