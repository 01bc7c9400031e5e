import { OptionsInvalidError } from '../errors.js';

/** Schema names nightshift accepts: a safe, unquoted-looking identifier of up to 48 characters. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

/** Checks a schema name, throwing NS_OPTIONS_INVALID with the rule when it is not acceptable. */
export function validateSchemaName(schema: string): string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new OptionsInvalidError('schema name', [
      {
        path: 'schema',
        message: `"${String(schema)}" is not allowed: use 1 to 48 lower-case letters, digits and _, starting with a letter or _`,
      },
    ]);
  }
  return schema;
}

/** Quotes an SQL identifier (schema, channel), doubling embedded quotes. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
