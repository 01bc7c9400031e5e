import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { curveChart, renderScaleMarkdown, type ScaleResults } from './scale-report.js';

/** Writes the markdown, the JSON beside it and one SVG per curve (`<stem>-<curve>.svg`); prints the markdown when asked. */
export function writeScaleResults(results: ScaleResults, out: string, print: boolean): void {
  const dir = dirname(out);
  const stem = basename(out).replace(/\.md$/, '');
  mkdirSync(dir, { recursive: true });
  const chartFile = (key: string) => `${stem}-${key}.svg`;
  for (const c of results.curves) writeFileSync(join(dir, chartFile(c.key)), `${curveChart(results, c)}\n`);
  const md = renderScaleMarkdown(results, chartFile);
  writeFileSync(out, `${md}\n`);
  writeFileSync(out.replace(/\.md$/, '.json'), `${JSON.stringify(results, null, 2)}\n`);
  if (print) process.stdout.write(`${md}\n`);
}

/**
 * The curves of `base` with those of each later run added (a curve of the same key replaced), each
 * merged curve noting the run it comes from and that run's load, so one scale.md can show curves
 * measured in separate runs (say, after a change to one part) without measuring the rest again.
 */
export function mergeScaleResults(base: ScaleResults, later: readonly ScaleResults[]): ScaleResults {
  const curves = [...base.curves];
  for (const r of later) {
    const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
    const from = `Measured in a separate run: ${r.startedAt}, ${Math.round(r.durationSeconds)} s, load average before/after ${load(r.machine.loadBefore)} / ${load(r.machine.loadAfter)}.`;
    for (const c of r.curves) {
      const merged = { ...c, notes: [...c.notes, from] };
      const i = curves.findIndex((x) => x.key === c.key);
      if (i >= 0) curves[i] = merged;
      else curves.push(merged);
    }
  }
  return { ...base, curves, notes: [...base.notes, ...later.flatMap((r) => r.notes)] };
}

// `npx tsx bench/scale/write-results.ts bench/results/scale.json [later.json …]`: renders the
// markdown and the charts again from a run's JSON (after a change to the report or the charts),
// measuring nothing; with later runs' JSON files, their curves are merged in first (mergeScaleResults)
// and the result written over the first file.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [json, ...more] = process.argv.slice(2);
  if (!json) throw new Error('usage: tsx bench/scale/write-results.ts <results.json> [later-results.json …]');
  const read = (f: string) => JSON.parse(readFileSync(f, 'utf8')) as ScaleResults;
  writeScaleResults(mergeScaleResults(read(json), more.map(read)), json.replace(/\.json$/, '.md'), false);
}
