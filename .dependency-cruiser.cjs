/**
 * Layer rules (ARCHITECTURE.md): imports run one way, down this list, and never in a cycle.
 * `npm run lint` (so `npm test`) fails when a part reaches up, or when a part of src/ has no place
 * here (that is how roles/, dev/ and errors.ts once went unchecked).
 *
 * Each tier may import the tiers below it; parts of one tier may import each other (no cycle)
 * unless `peers: false`. A new top-level part of src/ gets a line here before it can import.
 */
const tiers = [
  // The error catalogue: the root, it imports nothing of ours.
  { parts: ['errors'] },
  // Logger, metrics, tracing, events: what every service is handed.
  { parts: ['telemetry'] },
  // The service shape and resource tracking (a service is handed a logger from telemetry).
  { parts: ['lifecycle'] },
  // The only code that talks to PostgreSQL.
  { parts: ['db'] },
  // The local/embedded PostgreSQL for `nightshift dev` and tests: only cli/ and testing/ may
  // import it (rule dev-only-for-tools), never the library's runtime path.
  { parts: ['dev'] },
  { parts: ['jobs'] },
  // Which services a process runs, decided from names: below every service and the runtime.
  { parts: ['roles'] },
  // The services; they may use each other's types and helpers (streams' singletons use leadership).
  { parts: ['worker', 'schedules', 'leadership', 'maintenance', 'streams', 'pipelines', 'watchdog'] },
  // The facade that wires the services for the given roles.
  { parts: ['runtime'] },
  // defineConfig: options of every part, resolved by the runtime.
  { parts: ['config'] },
  // The public barrel (nightshift): no part below imports it (that would be a cycle); the
  // clients of the public API above may, and should.
  { parts: ['index'] },
  // The dashboard: a client of the public API, below the CLI, whose `nightshift dashboard` serves it.
  { parts: ['dashboard'] },
  // Clients of the public API, each on its own: no one of them imports another.
  { parts: ['cli', 'testing'], peers: false },
];

/** Files that are parts by themselves; every other part is a directory. `errors` is both: src/errors.ts re-exports src/errors/. */
const FILE_PARTS = new Set(['errors', 'index']);
const DIR_TOO = new Set(['errors']);
const at = (part) => (DIR_TOO.has(part) ? `^src/${part}(\\.ts$|/)` : FILE_PARTS.has(part) ? `^src/${part}\\.ts$` : `^src/${part}/`);
const allParts = tiers.flatMap((t) => t.parts);

const layerRules = tiers.flatMap((tier, i) => {
  const above = tiers.slice(i + 1).flatMap((t) => t.parts);
  return tier.parts.map((part) => {
    const forbidden = [...above, ...(tier.peers === false ? tier.parts.filter((p) => p !== part) : [])];
    return {
      name: `${part}-layer`,
      severity: 'error',
      comment: `${part} must not import ${forbidden.join(', ')} (see the tiers in .dependency-cruiser.cjs)`,
      from: { path: at(part) },
      to: { path: forbidden.map(at) },
    };
  });
});

// Ignored by `to: {}` below: a module of a placed part may import anything its layer rule allows.
const placed = allParts.map(at);

module.exports = {
  forbidden: [
    // Type-only cycles (two modules naming each other's types) have no runtime effect.
    { name: 'no-circular', severity: 'error', from: { path: '^src/' }, to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } } },
    ...layerRules,
    {
      name: 'part-without-layer',
      severity: 'error',
      comment: 'every top-level part of src/ needs a tier in .dependency-cruiser.cjs, or its imports go unchecked',
      from: { path: '^src/', pathNot: placed },
      to: {},
    },
    {
      name: 'dev-only-for-tools',
      severity: 'error',
      comment: 'src/dev/ (the local PostgreSQL) serves the CLI and nightshift/testing, never the library itself',
      from: { path: '^src/', pathNot: [at('dev'), at('cli'), at('testing')] },
      to: { path: at('dev') },
    },
    {
      name: 'no-pg-outside-db',
      severity: 'error',
      from: { path: '^src/', pathNot: [at('db'), at('dev')] },
      to: { path: 'node_modules/(pg|pg-pool|pg-cursor|pg-protocol)/' },
    },
    {
      name: 'no-redis-outside-streams',
      severity: 'error',
      from: { path: '^src/', pathNot: at('streams') },
      to: { path: 'node_modules/ioredis/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js'] },
  },
};
