/**
 * The Prometheus side, checked with Prometheus's own tool (Debian's `prometheus` package ships
 * /usr/bin/promtool): a running client's /metrics passes `promtool check metrics`; the shipped alert
 * rules pass `promtool check rules` and their unit tests (`promtool test rules`); and every metric
 * the rules and the Grafana dashboard query is one a client exports.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { defineJob, discard, hold } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RULES_DIR = join(ROOT, 'deploy', 'prometheus');
const PROMTOOL = [process.env.PROMTOOL, '/usr/bin/promtool', '/usr/local/bin/promtool'].find((p): p is string => !!p && existsSync(p));

function promtool(args: string[], input?: string, cwd = ROOT): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL!, args, { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out }));
    child.stdin.end(input ?? '');
  });
}

/** Metric names in PromQL text (nightshift's only; `_bucket` etc. kept as written). */
function namesIn(expr: string): string[] {
  return [...expr.matchAll(/\bnightshift_[a-z_]+\b/g)].map((m) => m[0]);
}

/** Every series name a Prometheus text exposition can contain, from its TYPE lines. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [name, type] = [m[1]!, m[2]!];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
  }
  return names;
}

const describeWithPromtool = PROMTOOL || process.env.CI === 'true' ? describe : describe.skip;
if (!PROMTOOL && process.env.CI !== 'true') console.warn('skipping the promtool checks: promtool is not installed (apt-get install prometheus, or set PROMTOOL)');

describeWithPromtool('Prometheus metrics, alert rules and dashboard, checked by promtool', () => {
  const t = useTestDatabase('prom');
  t.migrateBeforeAll();
  let scraped = '';

  beforeAll(() => {
    if (!PROMTOOL) throw new Error("promtool is required under CI=true but is not installed (.ci/run installs Debian's prometheus)");
  });

  it('a running client’s /metrics passes promtool check metrics', async () => {
    const payload = z.object({ outcome: z.enum(['ok', 'discard', 'hold']) });
    const job = defineJob({
      kind: 'prom-job',
      queue: 'prom',
      payload,
      run: async (p) => {
        if (p.outcome === 'discard') return discard('checked');
        if (p.outcome === 'hold') return hold('review');
      },
    });
    const ns = t.client({ jobs: [job], pollIntervalMs: 50, maintenanceIntervalMs: 200 });
    await ns.start();
    const { port } = await ns.serveOps({ port: 0 });
    await ns.enqueueMany(job, [{ outcome: 'ok' }, { outcome: 'discard' }, { outcome: 'hold' }]);
    const url = `http://127.0.0.1:${port}/metrics`;
    // Every family has samples once the jobs ran and this process leads maintenance.
    scraped = await waitFor('the jobs and the maintenance lease in /metrics', async () => {
      const body = await (await fetch(url)).text();
      return /nightshift_jobs_discarded_total\{[^}]*\} 1/.test(body) && body.includes('nightshift_leader_leases_held{lease="nightshift:maintenance"} 1') ? body : undefined;
    });
    const check = await promtool(['check', 'metrics'], scraped);
    expect(check.out.trim(), check.out).toBe('');
    expect(check.code).toBe(0);
  });

  it('the alert rules pass promtool check rules', async () => {
    const r = await promtool(['check', 'rules', join(RULES_DIR, 'nightshift-rules.yml')]);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('every alert fires on its fault and stays quiet on a healthy fleet (promtool test rules)', async () => {
    const r = await promtool(['test', 'rules', 'nightshift-rules.test.yml'], undefined, RULES_DIR);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('SUCCESS');
    // Each alert has a unit test.
    const rules = parse(readFileSync(join(RULES_DIR, 'nightshift-rules.yml'), 'utf8')) as { groups: { rules: { alert: string }[] }[] };
    const tests = readFileSync(join(RULES_DIR, 'nightshift-rules.test.yml'), 'utf8');
    for (const rule of rules.groups.flatMap((g) => g.rules)) expect(tests, rule.alert).toContain(`alertname: ${rule.alert}`);
  });

  it('the rules and the Grafana dashboard query only metrics a client exports', () => {
    expect(scraped, 'the scrape of the first test').not.toBe('');
    const exported = exposedNames(scraped);
    const rules = parse(readFileSync(join(RULES_DIR, 'nightshift-rules.yml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] };
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy', 'grafana', 'nightshift.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    const used = [
      ...rules.groups.flatMap((g) => g.rules.flatMap((r) => namesIn(r.expr).map((n) => ({ where: `rule ${r.alert}`, n })))),
      ...dashboard.panels.flatMap((p) => p.targets.flatMap((tg) => namesIn(tg.expr).map((n) => ({ where: `panel "${p.title}"`, n })))),
    ];
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((u) => !exported.has(u.n))).toEqual([]);
    // The dashboard's panels have distinct ids and each queries something.
    const ids = dashboard.panels.map((p) => (p as unknown as { id: number }).id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dashboard.panels) expect(p.targets.length, p.title).toBeGreaterThan(0);
  });
});
