import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/results/**', 'bench/.build/**', '.tmp/**', '*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-console': 'off',
    },
  },
  {
    // Only db/ talks to PostgreSQL and only streams/ to Redis (ARCHITECTURE.md).
    files: ['src/**/*.ts'],
    ignores: ['src/db/**', 'src/dev/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'pg', message: 'only src/db/ imports pg' }] }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/streams/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'ioredis', message: 'only src/streams/ imports the Redis client' }] }],
    },
  },
);
