import * as echarts from 'echarts';
import type { JobStatsPoint } from '../index.js';
import { html, trusted, type Html } from './html.js';

/**
 * A chart of a series drawn on the server as SVG by ECharts and shown as an image (a data URL):
 * no script runs for it in the browser, the page's Content-Security-Policy stays strict, and the
 * labels are ours (numbers and times, never job data).
 */
export function seriesChart(p: { title: string; points: readonly JobStatsPoint[]; lines: { name: string; value: (pt: JobStatsPoint) => number | null; color: string }[]; unit?: string }): Html {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: 640, height: 200 });
  try {
    chart.setOption({
      animation: false,
      title: { text: p.title, left: 8, top: 4, textStyle: { fontSize: 13, color: '#59636e' } },
      legend: { top: 4, right: 8, textStyle: { color: '#59636e' } },
      grid: { left: 48, right: 16, top: 36, bottom: 28 },
      xAxis: { type: 'time', axisLabel: { color: '#59636e' } },
      yAxis: { type: 'value', minInterval: 1, axisLabel: { color: '#59636e', formatter: p.unit ? `{value} ${p.unit}` : '{value}' } },
      series: p.lines.map((l) => ({
        name: l.name,
        type: 'line',
        showSymbol: false,
        color: l.color,
        data: p.points.map((pt) => [pt.bucket.getTime(), l.value(pt)]),
      })),
    });
    const svg = chart.renderToSVGString();
    return html`<figure class="chart"><img alt="${p.title}" width="640" height="200" src="${trusted(`data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`)}" /></figure>`;
  } finally {
    chart.dispose();
  }
}
