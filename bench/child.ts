/**
 * A benchmark child process: a producer or a worker of one system, driven over IPC by the
 * orchestrator (bench/run.ts). Bundled to plain JavaScript before it runs, so its memory is the
 * system's own and not a TypeScript loader's.
 */
import { readFileSync } from 'node:fs';
import { wallMs, type ChildCommand, type ChildInit, type ChildReply, type ChildRequest, type WorkerStats } from './protocol.js';
import { loadSystem } from './systems/load.js';
import type { BenchPayload, Producer, RunningWorker } from './systems/system.js';

function send(msg: ChildReply): void {
  process.send?.(msg);
}

/** Peak RSS: the kernel's high-water mark where available, else the largest sample seen. */
function peakRss(sampled: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // Not Linux: use the samples.
  }
  return sampled;
}

async function main(init: ChildInit): Promise<void> {
  const system = await loadSystem(init.system);
  let producer: Producer | undefined;
  let worker: RunningWorker | undefined;
  let sampled = process.memoryUsage.rss();
  let cpuAtFirst: NodeJS.CpuUsage | undefined;
  const cpuSinceFirst = () => {
    if (!cpuAtFirst) return null;
    const d = process.cpuUsage(cpuAtFirst);
    return d.user + d.system;
  };
  const stats: Omit<WorkerStats, 'peakRss'> = { handled: 0, firstAt: null, lastAt: null, latencies: [], peakHeapTotal: 0, peakHeapUsed: 0 };
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    sampled = Math.max(sampled, m.rss);
    stats.peakHeapTotal = Math.max(stats.peakHeapTotal, m.heapTotal);
    stats.peakHeapUsed = Math.max(stats.peakHeapUsed, m.heapUsed);
  }, 50);

  if (init.role === 'worker') {
    worker = await system.startWorker(
      init.url,
      init.concurrency ?? 10,
      (p: BenchPayload) => {
        const now = wallMs();
        stats.handled++;
        if (stats.firstAt === null) cpuAtFirst = process.cpuUsage();
        stats.firstAt ??= now;
        stats.lastAt = now;
        if (typeof p?.t === 'number') stats.latencies.push(now - p.t);
      },
      { queues: init.queues ?? 1 },
    );
  } else {
    producer = await system.producer(init.url);
  }

  const handle = async (c: ChildCommand): Promise<unknown> => {
    switch (c.op) {
      case 'bulk': {
        const payloads = Array.from({ length: c.n }, (_, i) => ({ i }));
        const t0 = wallMs();
        await producer!.enqueueBulk(payloads);
        return { ms: wallMs() - t0 };
      }
      case 'single': {
        let next = 0;
        const t0 = wallMs();
        await Promise.all(
          Array.from({ length: c.producers }, async () => {
            while (next < c.n) await producer!.enqueueOne({ i: next++ });
          }),
        );
        return { ms: wallMs() - t0 };
      }
      case 'paced': {
        // Open loop: each job is sent at its slot whether or not earlier sends have resolved.
        const gap = 1000 / c.perSecond;
        const t0 = wallMs();
        const inFlight: Promise<void>[] = [];
        for (let i = 0; i < c.n; i++) {
          const wait = t0 + i * gap - wallMs();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          inFlight.push(producer!.enqueueOne({ t: wallMs() }));
        }
        await Promise.all(inFlight);
        return { ms: wallMs() - t0 };
      }
      case 'stats':
        return { ...stats, peakRss: peakRss(sampled), cpuUsSinceFirst: cpuSinceFirst() } satisfies WorkerStats;
      case 'stop': {
        const final = { ...stats, peakRss: peakRss(sampled), cpuUsSinceFirst: cpuSinceFirst() } satisfies WorkerStats;
        clearInterval(sampler);
        await worker?.stop();
        await producer?.close();
        setImmediate(() => process.exit(0));
        return final;
      }
    }
  };

  process.on('message', (msg: ChildRequest) => {
    if (msg?.type !== 'request') return;
    handle(msg.command).then(
      (result) => send({ type: 'reply', id: msg.id, ok: true, result }),
      (err: unknown) => send({ type: 'reply', id: msg.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  send({ type: 'ready' });
}

process.once('message', (msg: ChildInit) => {
  if (msg?.type !== 'init') return;
  main(msg).catch((err: unknown) => {
    console.error(`bench child (${msg.system} ${msg.role}) failed:`, err);
    process.exit(1);
  });
});
// The orchestrator going away ends the child.
process.on('disconnect', () => process.exit(0));
