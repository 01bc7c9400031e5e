import { cpus, loadavg, totalmem } from 'node:os';
import { killAllChildren, withTimeout } from '../children.js';
import type { SystemAdapter } from '../systems/system.js';
import type { ScaleContext } from './context.js';
import { CURVES, type CurveSpec, type RunTarget } from './curves.js';
import { type CurveResult, type ScaleResults } from './scale-report.js';
import { FULL_SCALE, QUICK_SCALE, type ScaleSizes } from './sizes.js';
import { writeScaleResults } from './write-results.js';

/** What `npm run bench -- --scale` was asked for. */
export interface ScaleOptions {
  quick: boolean;
  runs?: number;
  systems: SystemAdapter[];
  /** Curve keys to run; all when undefined. */
  only?: Set<string>;
  /** The markdown file; charts go beside it as `<name>-<curve>.svg`. */
  out: string;
  /** Epoch ms by which the run must end (the rest is skipped and noted). */
  deadline: number;
  /** Template database of each system (migrated by the caller). */
  template(s: SystemAdapter): string;
  serverInfo: Record<string, string>;
  /** True once Ctrl-C (or SIGTERM) arrived: nothing more is started while the caller cleans up. */
  interrupted(): boolean;
}

/** The systems the scale curves compare (pg-boss is not on them: the issue asks for graphile-worker). */
export const SCALE_SYSTEMS = ['nightshift', 'graphile-worker'];

/** Every curve key, for --only. */
export const CURVE_KEYS = CURVES.map((c) => c.key);

/**
 * Runs the scale curves: for each curve and point, run r of every system, then run r + 1 (so a
 * change in the machine's background load hits all systems alike), each run on a fresh database
 * cloned from the system's template (or the point's preloaded template). Every unit is bounded;
 * a failure or timeout is noted and the run goes on. Writes the markdown, JSON and one SVG per curve.
 */
export async function runScale(ctx: ScaleContext, o: ScaleOptions): Promise<void> {
  const started = Date.now();
  const sizes: ScaleSizes = { ...(o.quick ? QUICK_SCALE : FULL_SCALE) };
  if (o.runs) sizes.runs = Math.max(1, o.runs);
  const results: ScaleResults = {
    mode: o.quick ? 'quick' : 'full',
    startedAt: new Date(started).toISOString(),
    durationSeconds: 0,
    machine: { cpus: cpus().length, model: cpus()[0]?.model.trim() ?? 'unknown CPU', memoryGb: Math.round(totalmem() / 2 ** 30), node: process.versions.node, loadBefore: loadavg(), loadAfter: [] },
    server: o.serverInfo,
    systems: o.systems.map((s) => ({ id: s.id, label: s.label })),
    sizes,
    curves: [],
    notes: [],
  };
  const server = ctx.server;
  const unit = async (what: string, fn: () => Promise<void>, maxMs: number): Promise<boolean> => {
    if (o.interrupted()) return false;
    const left = o.deadline - Date.now();
    if (left < 5_000) {
      results.notes.push(`skipped (time limit): ${what}`);
      return false;
    }
    try {
      await withTimeout(fn(), Math.min(maxMs, left), what);
      return true;
    } catch (err) {
      killAllChildren();
      if (o.interrupted()) return false;
      const msg = err instanceof Error ? err.message.split('\n')[0]! : String(err);
      ctx.log(`FAILED ${what}: ${msg}`);
      results.notes.push(`failed: ${what}: ${msg}`);
      return false;
    }
  };
  const name = (...parts: (string | number)[]) =>
    parts
      .join('_')
      .replace(/[^a-z0-9_]/gi, '_')
      .toLowerCase();

  for (const spec of CURVES) {
    if (o.only && !o.only.has(spec.key)) continue;
    const curve: CurveResult = {
      key: spec.key,
      title: spec.title,
      xLabel: spec.xLabel,
      yLabel: spec.yLabel,
      unit: spec.unit,
      better: spec.better,
      yLog: spec.yLog ?? false,
      suffixes: spec.suffixes,
      notes: spec.notes(sizes),
      points: spec.points(sizes),
      values: {},
      extra: {},
    };
    results.curves.push(curve);
    for (const point of curve.points) {
      const templates = new Map<string, string>();
      try {
        for (const s of o.systems) templates.set(s.id, (await preparePoint(ctx, spec, s, point.x, o, unit, name)) ?? '');
        for (let r = 1; r <= sizes.runs; r++) {
          for (const s of o.systems) {
            const template = templates.get(s.id);
            if (!template) continue;
            const db = name('scale', s.id, spec.key, point.x, r);
            await unit(
              `${s.id} ${spec.key} ${point.label} run ${r}`,
              async () => {
                const run: RunTarget = { db, url: await clone(ctx, db, template) };
                try {
                  const m = await spec.measure(ctx, s, run, point.x, sizes);
                  for (const [sfx, v] of Object.entries(m.values)) ((curve.values[point.label] ??= {})[sfx ? `${s.id} ${sfx}` : s.id] ??= []).push(v);
                  for (const [k, v] of Object.entries(m.extra ?? {})) ((curve.extra[point.label] ??= {})[`${s.id} ${k}`] ??= []).push(v);
                  ctx.log(
                    `${s.id} ${spec.key} ${point.label} run ${r}: ${Object.entries(m.values)
                      .map(([k, v]) => `${k || spec.unit} ${v.toFixed(v < 100 ? 2 : 0)}`)
                      .join(', ')}`,
                  );
                } finally {
                  await server.dropDatabase(db);
                }
              },
              spec.key === 'history' || spec.key === 'backlog' ? 1_800_000 : 600_000,
            );
          }
        }
      } finally {
        for (const [id, t] of templates) if (t && t !== o.template(o.systems.find((s) => s.id === id)!)) await server.dropDatabase(t).catch(() => undefined);
      }
      if (o.interrupted()) return;
      // Written after every point, so a run stopped half-way keeps what it measured.
      results.machine.loadAfter = loadavg();
      results.durationSeconds = (Date.now() - started) / 1000;
      writeScaleResults(results, o.out, false);
    }
  }

  results.machine.loadAfter = loadavg();
  results.durationSeconds = (Date.now() - started) / 1000;
  writeScaleResults(results, o.out, true);
  ctx.log(`written to ${o.out} and its charts`);
}

/** The template a point's runs clone: the system's own, or one filled by the curve's prepare step. */
async function preparePoint(
  ctx: ScaleContext,
  spec: CurveSpec,
  s: SystemAdapter,
  x: number,
  o: ScaleOptions,
  unit: (what: string, fn: () => Promise<void>, maxMs: number) => Promise<boolean>,
  name: (...parts: (string | number)[]) => string,
): Promise<string | undefined> {
  if (!spec.prepare) return o.template(s);
  const template = name('tplp', s.id, spec.key, x);
  let measured = false;
  const ok = await unit(
    `${s.id} ${spec.key} ${x}: prepare`,
    async () => {
      const url = await clone(ctx, template, o.template(s));
      measured = await spec.prepare!(ctx, s, { db: template, url }, x);
    },
    3_600_000,
  );
  if (ok && measured) return template;
  await ctx.server.dropDatabase(template).catch(() => undefined);
  return undefined;
}

/**
 * A fresh database cloned from `template`. FILE_COPY copies the files after a checkpoint instead of
 * writing every block to the WAL (PostgreSQL 15's default), which matters for millions of rows.
 */
async function clone(ctx: ScaleContext, db: string, template: string): Promise<string> {
  await ctx.server.dropDatabase(db);
  try {
    await ctx.server.admin.query(`CREATE DATABASE "${db}" TEMPLATE "${template}" STRATEGY FILE_COPY`);
  } catch (err) {
    // PostgreSQL before 15 has no STRATEGY (and always copies files).
    if (!/strategy/i.test(String(err))) throw err;
    await ctx.server.admin.query(`CREATE DATABASE "${db}" TEMPLATE "${template}"`);
  }
  return ctx.server.url(db);
}
