import type { Command } from 'commander';
import type { CliRun } from '../cli-io.js';
import { listCommand } from '../client-command.js';
import { age } from '../output.js';

/** `nightshift daemons`: leaders and their holders (daemons, maintenance, singleton consumers). */
export function registerDaemons(program: Command, run: CliRun): void {
  listCommand(program.command('daemons').description('leader leases: which process holds each daemon, maintenance and singleton, with its fencing token'), run, {
    fetch: async (ns, { ctx }) => {
      const leases = await ns.listLeases();
      const defined = (ctx.loaded.config.daemons ?? []).map((d) => `daemon:${d.name}`);
      return [
        ...leases.map((l) => ({ ...l, status: l.expired ? 'no leader (lease expired)' : 'leading' })),
        // A daemon that was never elected has no lease row yet: say so rather than hide it.
        ...defined
          .filter((n) => !leases.some((l) => l.name === n))
          .map((name) => ({ name, holder: null, token: null, expiresAt: null, acquiredAt: null, renewedAt: null, expired: true, status: 'never elected' })),
      ];
    },
    columns: [
      ['lease', (l) => l.name],
      ['status', (l) => l.status],
      ['holder', (l) => l.holder],
      ['token', (l) => l.token],
      ['leader for', (l, now) => (l.acquiredAt ? age(now - l.acquiredAt.getTime()) : '')],
      ['expires in', (l, now) => (l.expiresAt && !l.expired ? age(l.expiresAt.getTime() - now) : '')],
    ],
    empty: 'no leases: no process has run a daemon, maintenance or a singleton consumer on this schema yet',
  });
}
