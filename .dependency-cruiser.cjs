/**
 * Layer rules (ARCHITECTURE.md): imports run one way,
 *   errors/lifecycle/telemetry ← db ← jobs ← worker/schedules/leadership/maintenance/streams/pipelines/watchdog ← runtime ← cli/dashboard
 * and no cycles. `npm test` fails when a layer reaches up.
 */
const layer = (name, mayNotImport) => ({
  name: `${name}-layer`,
  severity: 'error',
  comment: `${name} must not import from ${mayNotImport.join(', ')}`,
  from: { path: `^src/${name}/` },
  to: { path: `^src/(${mayNotImport.join('|')})/` },
});

const above = {
  base: ['db', 'jobs', 'worker', 'schedules', 'leadership', 'maintenance', 'roles', 'streams', 'pipelines', 'watchdog', 'runtime', 'config', 'cli', 'dashboard', 'testing'],
  db: ['jobs', 'worker', 'schedules', 'leadership', 'maintenance', 'roles', 'streams', 'pipelines', 'watchdog', 'runtime', 'config', 'cli', 'dashboard', 'testing'],
  jobs: ['worker', 'schedules', 'leadership', 'maintenance', 'roles', 'streams', 'pipelines', 'watchdog', 'runtime', 'config', 'cli', 'dashboard', 'testing'],
  service: ['runtime', 'config', 'cli', 'dashboard', 'testing'],
  runtime: ['config', 'cli', 'dashboard', 'testing'],
};

module.exports = {
  forbidden: [
    // Type-only cycles (two modules naming each other's types) have no runtime effect.
    { name: 'no-circular', severity: 'error', from: { path: '^src/' }, to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } } },
    layer('lifecycle', above.base),
    layer('telemetry', above.base),
    layer('db', above.db),
    layer('jobs', above.jobs),
    ...['worker', 'schedules', 'leadership', 'maintenance', 'streams', 'pipelines', 'watchdog'].map((n) => layer(n, above.service)),
    layer('runtime', above.runtime),
    layer('config', ['cli', 'dashboard', 'testing']),
    {
      name: 'no-pg-outside-db',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(db|dev)/' },
      to: { path: 'node_modules/pg/' },
    },
    {
      name: 'no-redis-outside-streams',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/streams/' },
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
