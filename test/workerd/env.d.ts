declare namespace Cloudflare {
  interface Env extends Omit<import("../../worker/env.js").Env, never> {}
  interface GlobalProps {
    mainModule: typeof import("../../worker/index.js");
    durableNamespaces: "Session";
  }
}
