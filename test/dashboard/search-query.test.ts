import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDashboard, serveDashboard, type DashboardServer } from '../../src/dashboard/index.js';
import { parsePayloadQuery } from '../../src/dashboard/pages/job-filter.js';
import { defineJob, NightshiftError } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

// The jobs page's payload search (`payload.<field>:<value>`): quoted values keep their spaces, a
// quote left open and a field given twice are refused with a message on the page, never searched
// for as something that matches nothing.

const t = useTestDatabase('dsearchq');
t.migrateBeforeAll();

const person = defineJob({ kind: 'person.greet', payload: z.object({ name: z.string(), code: z.union([z.string(), z.number()]).optional() }), queue: 'people', run: async () => {} });

const servers: DashboardServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function refusal(q: string): string {
  try {
    parsePayloadQuery(q);
  } catch (err) {
    expect(err).toBeInstanceOf(NightshiftError);
    expect((err as NightshiftError).code).toBe('NS_OPTIONS_INVALID');
    return (err as Error).message;
  }
  throw new Error(`${q} was not refused`);
}

describe('the payload search of the jobs page', () => {
  it('keeps the spaces of a quoted value, reads \\" inside one, and matches a quoted number as text', () => {
    expect(parsePayloadQuery('payload.name:"two words"')).toEqual({ name: 'two words' });
    expect(parsePayloadQuery('  payload.name:"a \\"b\\" c"   payload.n:3 ')).toEqual({ name: 'a "b" c', n: 3 });
    expect(parsePayloadQuery('payload.code:"42" payload.customer.id:c-9')).toEqual({ code: '42', customer: { id: 'c-9' } });
    expect(parsePayloadQuery('payload.ok:true payload.gone:null')).toEqual({ ok: true, gone: null });
    expect(parsePayloadQuery('   ')).toBeUndefined();
  });

  it('refuses a quote left open, a field given twice, a field that is both a value and an object, and a term that is not a filter', () => {
    expect(refusal('payload.name:"two words')).toContain('payload.name opens a quote that is not closed');
    expect(refusal('payload.name:a payload.name:b')).toContain('payload.name is given twice');
    expect(refusal('payload.customer:x payload.customer.id:c-9')).toContain('clash');
    expect(refusal('payload.customer.id:c-9 payload.customer:x')).toContain('clash');
    expect(refusal('payload.name:"a"b')).toContain('put a space between terms');
    expect(refusal('payload.name:')).toContain('has no value');
    expect(refusal('name:ann')).toContain('is not a payload filter');
  });

  it('finds a job by a quoted value with spaces, and shows an open quote or a repeated field as an error on the page', async () => {
    const ns = t.client({ jobs: [person] });
    const [two, one] = await ns.enqueueMany(person, [{ name: 'two words' }, { name: 'two' }]);
    const server = await serveDashboard(createDashboard(ns, {}), { port: 0 });
    servers.push(server);
    const page = async (q: string) => {
      const res = await fetch(`${server.url.replace(/\/$/, '')}/jobs?q=${encodeURIComponent(q)}`);
      return { status: res.status, text: await res.text() };
    };
    const found = await page('payload.name:"two words"');
    expect(found.status).toBe(200);
    expect(found.text).toContain(`data-job="${two!.id}"`);
    expect(found.text).not.toContain(`data-job="${one!.id}"`);

    const open = await page('payload.name:"two words');
    expect(open.status).toBe(400);
    expect(open.text).toMatch(/class="flash error">NS_OPTIONS_INVALID: [^<]*opens a quote that is not closed/);
    expect(open.text).not.toContain('data-job=');

    const twice = await page('payload.name:two payload.name:"two words"');
    expect(twice.status).toBe(400);
    expect(twice.text).toContain('payload.name is given twice');
  });
});
