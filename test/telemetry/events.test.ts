import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/telemetry/events.js';
import { createLogger, logEvents } from '../../src/telemetry/logger.js';

describe('event bus', () => {
  it('wants a type only when a subscriber takes it, so per-job events cost nothing for a quiet logger', () => {
    const bus = new EventBus();
    expect(bus.wants('job.started')).toBe(false);
    const logger = createLogger({ level: 'info' });
    const off = logEvents(bus, logger);
    // job.started is logged at debug: an info logger does not take it, a failure it does.
    expect(bus.wants('job.started')).toBe(false);
    expect(bus.wants('job.failed')).toBe(true);
    logger.level = 'debug';
    expect(bus.wants('job.started')).toBe(true);
    const seen: string[] = [];
    const offAll = bus.on((e) => seen.push(e.type));
    logger.level = 'info';
    expect(bus.wants('job.started')).toBe(true);
    bus.emit({ type: 'listener.connected' });
    expect(seen).toEqual(['listener.connected']);
    offAll();
    off();
    expect(bus.wants('job.failed')).toBe(false);
  });
});
