import type { FastifyInstance } from 'fastify';
import { logFields, type Tracer } from '../lib/tracing.js';

/** Probes and the docs' and console's files: not traced (their log lines are debug too). */
const ROUTINE = /^\/(healthz|readyz|metrics|docs|console)(\/|\?|$)/;

/**
 * A server span per API request (docs/observability.md "Spans"), named from its route template,
 * with OpenTelemetry's HTTP attributes, joining the caller's `traceparent`. The request's log lines
 * carry its trace and span ids; what the request publishes carries its context (build-app.ts puts
 * it on the principal's causation). Never the query string: it may carry search terms or tokens.
 */
export function traceRequests(app: FastifyInstance, tracer: Tracer): void {
  app.addHook('onRequest', async (request, reply) => {
    if (ROUTINE.test(request.url)) return;
    const given = request.headers.traceparent;
    const state = request.headers.tracestate;
    const route = request.routeOptions.url;
    const span = tracer.start(route ? `${request.method} ${route}` : request.method, {
      kind: 'server',
      parent:
        typeof given === 'string'
          ? { traceparent: given, ...(typeof state === 'string' ? { tracestate: state } : {}) }
          : null,
    });
    // Described only when recorded: a trace sampled out costs its context and nothing more.
    if (span.recording) {
      const [host, port] = (request.headers.host ?? '').split(':');
      span.set({
        'http.request.method': request.method,
        'http.route': route,
        'url.path': request.url.split('?', 1)[0],
        'url.scheme': request.protocol,
        'server.address': host || undefined,
        'server.port': port ? Number(port) : undefined,
        'client.address': request.ip,
        'network.protocol.version': request.raw.httpVersion,
        'user_agent.original': request.headers['user-agent'],
      });
      // Lines written for a recorded request (its completion line included) name its trace.
      request.log = request.log.child(logFields(span));
      reply.log = request.log;
    }
    request.span = span;
  });
  app.addHook('onResponse', async (request, reply) => {
    const span = request.span;
    if (!span?.recording) return;
    span.set({ 'http.response.status_code': reply.statusCode });
    if (reply.statusCode >= 500) span.fail(`HTTP ${reply.statusCode}`);
    span.end();
  });
}
