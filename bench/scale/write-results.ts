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

// `npx tsx bench/scale/write-results.ts bench/results/scale.json`: renders the markdown and the
// charts again from a run's JSON (after a change to the report or the charts), measuring nothing.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const json = process.argv[2];
  if (!json) throw new Error('usage: tsx bench/scale/write-results.ts <results.json>');
  writeScaleResults(JSON.parse(readFileSync(json, 'utf8')) as ScaleResults, json.replace(/\.json$/, '.md'), false);
}
