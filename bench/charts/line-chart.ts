import * as echarts from 'echarts';

/** One line of a chart: a value per category (null where it was not measured). */
export interface ChartSeries {
  name: string;
  values: (number | null)[];
  /** Line style and point symbol, to tell a system's series apart (e.g. p50, p95, p99). Default solid, circle. */
  line?: 'solid' | 'dashed' | 'dotted';
  symbol?: 'circle' | 'triangle' | 'rect' | 'diamond';
  /** Colour, so a system keeps one colour across its series. */
  color?: string;
}

/** A line chart with points over labelled categories (the points of a curve). */
export interface LineChart {
  title: string;
  /** Lines under the title: conditions and caveats the reader needs. */
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  categories: string[];
  series: ChartSeries[];
  yLog?: boolean;
  width?: number;
  height?: number;
}

/** Colours by system, so every chart shows a system in the same colour. */
export const SYSTEM_COLORS: Record<string, string> = { nightshift: '#2f6fb0', 'graphile-worker': '#d1762b', 'pg-boss': '#4a9a4a', bullmq: '#8a4fb0', raw: '#666666' };

function compact(v: number): string {
  if (v === 0) return '0';
  if (Math.abs(v) >= 10_000) return `${Math.round(v / 1000)}k`;
  if (Math.abs(v) >= 1_000) return `${(v / 1000).toFixed(1)}k`;
  if (Math.abs(v) >= 10 || Number.isInteger(v)) return String(Math.round(v));
  return v.toFixed(2);
}

/** Wraps text to lines of at most `width` characters (the SSR renderer does not wrap subtitles). */
function wrap(text: string, width: number): string {
  return text
    .split('\n')
    .flatMap((line) => {
      const lines: string[] = [];
      let cur = '';
      for (const word of line.split(' ')) {
        if (cur && cur.length + word.length + 1 > width) {
          lines.push(cur);
          cur = word;
        } else cur = cur ? `${cur} ${word}` : word;
      }
      return [...lines, cur];
    })
    .join('\n');
}

/**
 * Renders the chart to an SVG string with Apache ECharts' server-side renderer (no browser, no
 * canvas): axes named, a legend, every point marked and labelled with its value, white background.
 */
export function renderLineChart(c: LineChart): string {
  const width = c.width ?? 760;
  const height = c.height ?? 460;
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    const subtitle = c.subtitle ? wrap(c.subtitle, Math.floor(width / 6.6)) : '';
    const subtitleLines = subtitle ? subtitle.split('\n').length : 0;
    const top = 56 + subtitleLines * 16;
    const side = c.series.length > 3;
    chart.setOption({
      animation: false,
      backgroundColor: '#ffffff',
      textStyle: { fontFamily: 'sans-serif' },
      title: { text: c.title, subtext: subtitle, left: 16, top: 8, textStyle: { fontSize: 16 }, subtextStyle: { fontSize: 11, color: '#555' } },
      // Up to three series: a legend row under the chart (wide gaps: the server-side renderer
      // estimates text widths, and viewers' fonts run wider); more: a column on the right.
      legend: side ? { orient: 'vertical', right: 12, top: top + 8, itemGap: 14, data: c.series.map((s) => s.name) } : { bottom: 8, itemGap: 56, data: c.series.map((s) => s.name) },
      grid: { left: 80, right: side ? 200 : 40, top: top + 8, bottom: side ? 60 : 92 },
      xAxis: { type: 'category', data: c.categories, name: c.xLabel, nameLocation: 'middle', nameGap: 30, boundaryGap: true },
      yAxis: {
        type: c.yLog ? 'log' : 'value',
        name: c.yLabel,
        nameLocation: 'middle',
        nameGap: 58,
        ...(c.yLog ? {} : { min: 0 }),
        axisLabel: { formatter: (v: number) => compact(v) },
      },
      series: c.series.map((s) => ({
        name: s.name,
        type: 'line',
        data: s.values,
        connectNulls: false,
        symbol: s.symbol ?? 'circle',
        symbolSize: 8,
        lineStyle: { type: s.line ?? 'solid', ...(s.color ? { color: s.color } : {}) },
        ...(s.color ? { itemStyle: { color: s.color } } : {}),
        label: { show: true, position: 'top', fontSize: 10, formatter: (p: { value: number }) => compact(p.value) },
      })),
    });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}
