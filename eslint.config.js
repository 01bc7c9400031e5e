import js from '@eslint/js';
import perfectionist from 'eslint-plugin-perfectionist';
import tseslint from 'typescript-eslint';
import { formatEnforced } from './scripts/format-enforced.mjs';

/**
 * Imports only one directory may make (ARCHITECTURE.md): only db/ talks to PostgreSQL (dev/ too:
 * it runs the local server), only streams/ to Redis. One table, turned into one
 * `no-restricted-imports` per area below, so no block can replace another's bans — flat config
 * keeps only the last value of a rule for a file, which once left the `pg` ban unenforced.
 */
const owned = [
  { names: ['pg', 'pg-pool', 'pg-cursor', 'pg-protocol'], owners: ['src/db', 'src/dev'], message: 'only src/db/ imports the PostgreSQL driver (src/dev/ too, for the local server)' },
  { names: ['ioredis'], owners: ['src/streams'], message: 'only src/streams/ imports the Redis client' },
];

/** The ban of every owned import except those `area` owns. */
function bansFor(area) {
  const bans = owned.filter((o) => !o.owners.includes(area));
  return ['error', { paths: bans.flatMap((o) => o.names.map((name) => ({ name, message: o.message }))), patterns: bans.map((o) => ({ group: o.names.map((n) => `${n}/*`), message: o.message })) }];
}

const areas = [...new Set(owned.flatMap((o) => o.owners))];
const importBans = [
  { files: ['src/**/*.ts'], ignores: areas.map((a) => `${a}/**`), rules: { 'no-restricted-imports': bansFor(undefined) } },
  ...areas.map((a) => ({ files: [`${a}/**/*.ts`], rules: { 'no-restricted-imports': bansFor(a) } })),
];

/**
 * Import order is enforced on the files of .format-enforced (the list the formatter check reads):
 * the whole repository once it has been formatted, until then only the files listed.
 * `npm run format` sets NS_FORMAT_ALL to sort every file's imports.
 */
const formatEnforcedFiles = process.env.NS_FORMAT_ALL ? ['**/*.{ts,mts,cts,js,mjs,cjs}'] : formatEnforced();

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**', 'bench/.build/**', '.tmp/**', '*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
      },
    },
    plugins: { perfectionist },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': 'off',
    },
  },
  {
    // Promises nobody awaits or handles: a rejection there is an unhandled rejection (the process
    // dies) and an ordering the code did not mean. `void` marks the intentional ones.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  ...importBans,
  {
    // Builtins, packages, then relative imports (further up first), no blank lines; in braces,
    // values then types (the house style), each sorted by name.
    files: formatEnforcedFiles,
    rules: {
      'perfectionist/sort-imports': ['error', { type: 'alphabetical', ignoreCase: true, groups: ['builtin', 'external', 'parent', 'sibling', 'index', 'unknown'], newlinesBetween: 0 }],
      'perfectionist/sort-named-imports': ['error', { type: 'alphabetical', ignoreCase: true, groups: ['value-import', 'type-import'] }],
    },
  },
);
