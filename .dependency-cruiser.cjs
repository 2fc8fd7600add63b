// Import rules checked in CI (`npm run lint`, issue 27 §8): which part of the tree may import which.
// Type-only imports count for direction (a wrong-way type is still a wrong-way dependency) but not for
// cycles, which are checked on the runtime graph.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-runtime-cycle",
      severity: "error",
      comment: "A runtime import cycle: module load order then decides what is undefined at start-up.",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only", "type-import", "pre-compilation-only"] } },
    },
    {
      name: "contract-imports-nothing-of-ours",
      severity: "error",
      comment: "shared/contract/ is the wire shapes every party imports: it imports no other module of ours.",
      from: { path: "^shared/contract/" },
      to: { path: "^(shared|adapter|worker|web)/", pathNot: "^shared/contract/" },
    },
    {
      name: "crypto-imports-only-contract",
      severity: "error",
      comment:
        "shared/crypto/ imports nothing of ours but itself and the wire contract (the envelope's wire shape belongs to shared/contract/, which crypto seals).",
      from: { path: "^shared/crypto/" },
      to: { path: "^(shared|adapter|worker|web)/", pathNot: "^shared/(crypto|contract)/" },
    },
    {
      name: "shared-imports-no-host",
      severity: "error",
      comment: "shared/ is imported by every host; it never imports one of them.",
      from: { path: "^shared/" },
      to: { path: "^(adapter|worker|web)/" },
    },
    {
      name: "adapter-never-imports-worker",
      severity: "error",
      from: { path: "^adapter/" },
      to: { path: "^(worker|web)/" },
    },
    {
      name: "worker-never-imports-web",
      severity: "error",
      from: { path: "^worker/" },
      to: { path: "^(web|adapter)/" },
    },
    {
      name: "web-never-imports-adapter-or-worker",
      severity: "error",
      from: { path: "^web/" },
      to: { path: "^(adapter|worker)/" },
    },
    {
      name: "source-never-imports-tests",
      severity: "error",
      comment: "Test-only code lives in test/helpers/ and is imported by tests only.",
      from: { path: "^(shared|adapter|worker|web)/" },
      to: { path: "^test/" },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "An import that resolves to no file and no installed package (workerd's built-in cloudflare: modules aside).",
      from: {},
      to: { couldNotResolve: true, pathNot: "^cloudflare:" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(dist|node_modules|\\.wrangler|bench/\\.tmp)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.node.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types", "workerd", "worker", "browser"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs", ".d.ts", ".json"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
