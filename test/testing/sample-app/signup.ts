// The sample app's sign-up: the user row and the job that sets up the account commit together
// (the outbox pattern), in the caller's transaction.
import type { Executor, Nightshift } from 'nightshift';
import { createAccount } from './jobs.js';

// #region signup
/** Records a user and enqueues their account set-up, both inside the transaction of `tx`. Returns the user id. */
export async function signUp(ns: Nightshift, tx: Executor, email: string): Promise<string> {
  // The sample keeps its users table in the client's schema, so each test file has its own.
  const { rows } = await tx.query({ text: `INSERT INTO "${ns.schema}".users (email) VALUES ($1) RETURNING id::text`, values: [email] });
  const userId = (rows[0] as { id: string }).id;
  await ns.enqueue(createAccount, { userId, email }, { db: tx });
  return userId;
}
// #endregion
