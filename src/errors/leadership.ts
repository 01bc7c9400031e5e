/** Errors of leases: a refused fenced write, an ended term. */
import { NightshiftError } from './base.js';

/**
 * A write fenced by a leader's token was refused: the token is not the current, unexpired term of
 * the lease (the lease expired or passed to another holder). Raised by `assert_lease` in SQL
 * (SQLSTATE NS005) and by `ctx.fence(tx)`; the transaction it was raised in must roll back.
 */
export class FencedError extends NightshiftError {
  /** The lease name, when known. */
  readonly lease: string | undefined;
  /** The refused fencing token, when known. */
  readonly token: string | undefined;
  constructor(detail: string, lease?: string, token?: string) {
    super('NS_FENCED', `write refused by fencing: ${detail}`, {
      hint: 'this process is no longer the leader of that lease; stop the work and let the current leader do it',
    });
    this.lease = lease;
    this.token = token;
  }
}

/** A leader's term ended: the reason its signal carries (lease lost, not renewed in time, or released on stop). */
export class LeadershipLostError extends NightshiftError {
  /** Why the term ended: `lost` (taken over or found expired), `expired` (not renewed in time), `released` (stop). */
  readonly why: 'lost' | 'expired' | 'released';
  constructor(lease: string, token: string, why: 'lost' | 'expired' | 'released') {
    const text = {
      lost: 'the lease was found expired or held by another process',
      expired: 'it could not be renewed before it would expire, so this process stepped down',
      released: 'it was released because this process is stopping',
    }[why];
    super('NS_LEADERSHIP_LOST', `leadership of "${lease}" (token ${token}) ended: ${text}`);
    this.why = why;
  }
}
