import { createHash } from 'node:crypto';
import { quoteIdent } from './identifiers.js';
import type { Statement } from './executor.js';

/**
 * Builds the statements of one schema. Statement texts are fixed when the client is created (the
 * only thing that varies is the quoted schema name), and each gets a name that is stable for that
 * schema, so the hot path is parsed and planned once per connection.
 */
export class StatementSet {
  readonly schema: string;
  readonly q: string;
  private readonly tag: string;

  constructor(schema: string, private readonly prepared = true) {
    this.schema = schema;
    this.q = quoteIdent(schema);
    this.tag = createHash('sha1').update(schema).digest('hex').slice(0, 8);
  }

  /** A named statement; `text` receives the quoted schema to qualify table names with. */
  named(name: string, text: (schema: string) => string): Statement {
    const body = text(this.q);
    return this.prepared ? { name: `ns_${this.tag}_${name}`, text: body } : { text: body };
  }

  /** A statement run rarely (admin, maintenance): not prepared. */
  plain(text: (schema: string) => string): Statement {
    return { text: text(this.q) };
  }
}
