/**
 * The part of the Standard Schema interface (implemented by zod 4, valibot, arktype, …) that
 * nightshift uses, so payload schemas are not tied to one validator or one copy of zod.
 */
export interface PayloadSchema<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => SchemaResult<Output> | Promise<SchemaResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/** A validation result: a value, or issues. */
export type SchemaResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined }> };

/** The input type of a schema (what `enqueue` accepts). */
export type SchemaInput<S> = S extends PayloadSchema<infer I, unknown> ? I : never;
/** The output type of a schema (what `run` receives). */
export type SchemaOutput<S> = S extends PayloadSchema<unknown, infer O> ? O : never;

/** Whether a value implements the Standard Schema interface. */
export function isPayloadSchema(value: unknown): value is PayloadSchema {
  const std = (value as PayloadSchema | null)?.['~standard'];
  return typeof std === 'object' && std !== null && typeof std.validate === 'function';
}

/** Formats a Standard Schema issue path as a dotted string. */
export function issuePath(path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined): string {
  if (!path) return '';
  return path.map((p) => String(typeof p === 'object' ? p.key : p)).join('.');
}
