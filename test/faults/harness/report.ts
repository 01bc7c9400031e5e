import type { ScenarioResult } from './scenario.js';

const fmtMs = (ms: number | null) => (ms === null ? '—' : ms < 10_000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);

function faultsText(r: ScenarioResult): string {
  const parts = Object.entries(r.faults)
    .filter(([k]) => k !== 'clock-skew')
    .map(([k, n]) => `${n} ${k}`);
  if (r.faults['clock-skew']) parts.push(`${r.faults['clock-skew']} skewed clock(s)`);
  return parts.join(', ') || 'none';
}

/** The results as a table: scenario, faults injected, jobs, lost, duplicates (explained / unexplained), max recovery time. */
export function resultTable(results: readonly ScenarioResult[]): string {
  const header = ['scenario', 'faults injected', 'jobs', 'lost', 'duplicates (explained / unexplained)', 'max recovery', 'invariants'];
  const rows = results.map((r) => [
    r.id,
    faultsText(r),
    `${r.jobs} ${r.unit}`,
    String(r.lost),
    `${r.duplicates.explained} / ${r.duplicates.unexplained}`,
    fmtMs(r.maxRecoveryMs),
    r.invariants.every((i) => i.holds) ? `all ${r.invariants.length} hold` : `${r.invariants.filter((i) => !i.holds).length} FAILED`,
  ]);
  return markdownTable(header, rows);
}

/** A Markdown table (readable as plain text too). */
export function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** One scenario in detail: what each invariant says and whether it held, what recovery measured, and the extra figures. */
export function resultDetail(r: ScenarioResult): string {
  const lines = [`## ${r.id}: ${r.title}  (${(r.durationMs / 1000).toFixed(1)} s)`];
  for (const i of r.invariants) lines.push(`  ${i.holds ? 'holds ' : 'FAILED'}  ${i.name}${i.detail ? `\n          ${i.detail}` : ''}`);
  lines.push(`  max recovery: ${fmtMs(r.maxRecoveryMs)} — ${r.recovery}`);
  for (const [k, v] of Object.entries(r.figures)) lines.push(`  ${k}: ${v}`);
  return lines.join('\n');
}
