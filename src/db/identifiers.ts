import { OptionsInvalidError } from '../errors.js';

/** Schema names nightshift accepts: a safe, unquoted-looking identifier of up to 48 characters. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

/** What is wrong with a schema name, or undefined when it is acceptable. */
export function schemaNameProblem(schema: unknown): string | undefined {
  // PostgreSQL reserves pg_ for its own schemas: CREATE SCHEMA refuses it (SQLSTATE 42939).
  if (typeof schema === 'string' && schema.startsWith('pg_')) return `"${schema.slice(0, 60)}" is not allowed: names starting with pg_ are reserved by PostgreSQL`;
  if (typeof schema === 'string' && SCHEMA_NAME.test(schema)) return undefined;
  return `"${String(schema).slice(0, 60)}" is not allowed: use 1 to 48 lower-case letters, digits and _, starting with a letter or _`;
}

/** Checks a schema name, throwing NS_OPTIONS_INVALID with the rule when it is not acceptable. */
export function validateSchemaName(schema: string): string {
  const problem = schemaNameProblem(schema);
  if (problem) throw new OptionsInvalidError('schema name', [{ path: 'schema', message: problem }]);
  return schema;
}

/** Quotes an SQL identifier (schema, channel), doubling embedded quotes. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
