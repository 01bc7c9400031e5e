import type { Command } from 'commander';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { age, json, out, table } from '../output.js';

/** `nightshift daemons`: leaders and their holders (daemons, maintenance, singleton consumers). */
export function registerDaemons(program: Command): void {
  program
    .command('daemons')
    .description('leader leases: which process holds each daemon, maintenance and singleton, with its fencing token')
    .option('--json', 'print JSON')
    .action(async (f: { json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const leases = await withClient(ctx, (ns) => ns.listLeases());
      const defined = (ctx.loaded.config.daemons ?? []).map((d) => `daemon:${d.name}`);
      const rows = [
        ...leases.map((l) => ({ ...l, status: l.expired ? 'no leader (lease expired)' : 'leading' })),
        // A daemon that was never elected has no lease row yet: say so rather than hide it.
        ...defined.filter((n) => !leases.some((l) => l.name === n)).map((name) => ({ name, holder: null, token: null, expiresAt: null, acquiredAt: null, renewedAt: null, expired: true, status: 'never elected' })),
      ];
      if (f.json) return json(rows);
      out(
        table(
          ['lease', 'status', 'holder', 'token', 'leader for', 'expires in'],
          rows.map((l) => [l.name, l.status, l.holder, l.token, l.acquiredAt ? age(Date.now() - l.acquiredAt.getTime()) : '', l.expiresAt && !l.expired ? age(l.expiresAt.getTime() - Date.now()) : '']),
        ),
      );
    });
}
