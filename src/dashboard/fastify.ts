import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dashboard } from './handler.js';

/** The parts of a fastify instance the plugin uses (so nightshift needs no fastify dependency). */
interface FastifyLike {
  all(path: string, handler: (request: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => Promise<void>): unknown;
  addContentTypeParser(type: string, parser: (req: unknown, payload: unknown, done: (err: null, body?: unknown) => void) => void): unknown;
  addHook(name: 'onClose', hook: () => Promise<void>): unknown;
}

/**
 * A fastify plugin serving the dashboard under its `basePath`: register it with
 * `app.register(dashboardPlugin(dashboard))`. Requests are handed to the dashboard as they
 * came (the dashboard reads its own form bodies), so fastify's body parsing is bypassed for the
 * dashboard's routes only; the dashboard closes with the app.
 */
export function dashboardPlugin(dashboard: Dashboard): (app: FastifyLike) => Promise<void> {
  const plugin = async (app: FastifyLike) => {
    // The dashboard's POSTs are forms: left unread here, for the dashboard to read and bound.
    app.addContentTypeParser('application/x-www-form-urlencoded', (_req, _payload, done) => done(null));
    const handler = async (request: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => {
      reply.hijack();
      const handled = await dashboard.handle(request.raw, reply.raw);
      if (!handled) {
        reply.raw.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
        reply.raw.end('not found\n');
      }
    };
    const base = dashboard.basePath;
    app.all(base || '/', handler);
    app.all(`${base}/*`, handler);
    app.addHook('onClose', () => dashboard.close());
  };
  // Not encapsulated (fastify-plugin's marker): the routes keep the prefix the dashboard was made with.
  (plugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true;
  return plugin;
}
