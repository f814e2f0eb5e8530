import { randomUUID } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Registry } from 'prom-client';
import { migrationsApplied } from '../db/migrate.js';
import { ping } from '../db/store.js';
import { satisfies } from '../http/access.js';
import type { App, RouteEntry } from '../http/app.js';
import { AppError } from '../http/errors.js';
import { hardenedJsonParser, nulCharacter } from '../http/json-body.js';
import { describeOperation, docsPageOptions, openapiOptions } from '../http/openapi.js';
import { ErrorBody } from '../http/schemas.js';
import { causationFromHeaders, withTrace } from '../lib/causation.js';
import { contextOf } from '../lib/tracing.js';
import { registerConsole } from './console.js';
import { handleClientError, handleError, handleFrameworkError } from './errors.js';
import { registerHttpMetrics } from './metrics.js';
import { traceRequests } from './request-tracing.js';
import { registerAreaRoutes } from './routes.js';
import type { AppContext } from './types.js';
import { compileValidator, lazySerializers } from './validation.js';

export const API_PREFIX = '/api/v1';
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface BuiltApp {
  app: App;
  /** Every API route with its declared access, read by the authorization matrix test. */
  routes: RouteEntry[];
}

/** Builds the HTTP app without listening (the CLI's server owns listen and close). */
export interface BuildAppOptions {
  /** What /metrics serves; the process registry unless given (svc serve adds its worker thread's). */
  scrapeMetrics?: () => Promise<Registry>;
}

export async function buildApp(ctx: AppContext, options: BuildAppOptions = {}): Promise<BuiltApp> {
  const app = Fastify({
    loggerInstance: ctx.log,
    bodyLimit: ctx.config.bodyLimitBytes,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Answered below with the contract's body instead of Fastify's.
    return503OnClosing: false,
    frameworkErrors: handleFrameworkError,
    clientErrorHandler: handleClientError,
    logController: new OneLinePerRequest(),
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
  }).withTypeProvider() as unknown as App;

  app.setValidatorCompiler(compileValidator);
  refuseNulCharacters(app);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .send({ code: 'NOT_FOUND', message: `Route ${request.method} ${request.url.split('?')[0]} not found` }),
  );
  app.addSchema(ErrorBody);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  const routes: RouteEntry[] = [];
  const operationIds = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(API_PREFIX) || route.method === 'HEAD') return;
    const access = route.config?.access;
    if (!access) throw new Error(`route ${route.method} ${route.url} declares no access`);
    route.schema ??= {};
    const schema = route.schema as Record<string, unknown>;
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, access, schema });
    describeOperation({ method: String(route.method), url: route.url, schema }, access, operationIds);
    if (!route.schema?.body && route.method !== 'GET') refuseBodyFields(route);
    else if (route.schema?.body) defaultEmptyBody(route);
  });

  // Requests that arrive once shutdown began (on kept-alive connections): 503, and the connection
  // closes so the client reconnects elsewhere. In-flight requests finish normally.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    throw new AppError('SERVICE_UNAVAILABLE', 'The service is shutting down');
  });

  app.decorateRequest('principal', undefined as never);
  app.decorateRequest('span', null);
  if (ctx.tracer.enabled) traceRequests(app as never, ctx.tracer);
  app.addHook('onRequest', async (request) => {
    const access = request.routeOptions.config.access;
    if (!access || access.kind === 'public') return;
    const principal = await ctx.services.authenticate(request.headers as never);
    if (!principal) throw new AppError('AUTH.UNAUTHENTICATED', 'Authentication required');
    if (access.kind === 'api_key' && principal.authPath !== 'api_key') {
      // docs/errors.md "Errors": every AUTH.FORBIDDEN carries required_scopes and mode. No scope opens this route,
      // only the kind of credential does: required_scopes is empty and required_auth names the kind.
      throw new AppError('AUTH.FORBIDDEN', 'This endpoint accepts API keys only; no scope opens it', {
        required_scopes: [],
        mode: 'any',
        required_auth: 'api_key',
      });
    }
    if (!satisfies(principal, access)) {
      const scoped = access as { scopes: readonly string[]; mode: string };
      throw new AppError('AUTH.FORBIDDEN', `Requires ${scoped.mode} of: ${scoped.scopes.join(', ')}`, {
        required_scopes: scoped.scopes,
        mode: scoped.mode,
      });
    }
    // A request a workflow run's HTTP call made carries its depth: events it publishes inherit it,
    // and, with tracing on, the request's span.
    const causation = withTrace(
      causationFromHeaders(request.headers),
      request.span ? contextOf(request.span) : undefined,
    );
    request.principal = causation ? { ...principal, causation } : principal;
  });

  registerHttpMetrics(app as never, ctx.services.metrics, options.scrapeMetrics);
  await app.register(swagger, openapiOptions);
  await app.register(swaggerUi, docsPageOptions);
  await app.register(fastifyCookie);
  await registerConsole(app, ctx.config.consoleDir);

  app.get('/healthz', { schema: { hide: true }, config: { access: { kind: 'public' } } }, async () => ({
    status: 'ok',
  }));
  app.get(
    '/readyz',
    { schema: { hide: true }, config: { access: { kind: 'public' } } },
    async (_req, reply) => {
      const ready = (await ping(ctx.store)) && (await migrationsApplied(ctx.store));
      return reply.status(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable' });
    },
  );

  await app.register(
    async (api) => {
      api.get('/openapi.json', { schema: { hide: true }, config: { access: { kind: 'public' } } }, async () =>
        app.swagger(),
      );
      registerAreaRoutes(api as App, ctx.services);
    },
    { prefix: API_PREFIX },
  );
  await app.ready();
  return { app, routes };
}

/** Probes and the docs' and console's files: routine, so their lines are debug; the API's requests are info. */
const ROUTINE = /^\/(healthz|readyz|metrics|docs|console)(\/|\?|$)/;

/**
 * One log line per answered request (Fastify writes two: received and completed): method, path,
 * route, status and duration; never the query string, which may carry search terms.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}
  override routeNotFound(): void {}
  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      path: request.url.split('?', 1)[0],
      route: request.routeOptions.url,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request failed');
    else if (ROUTINE.test(request.url)) reply.log.debug(line, 'request');
    else reply.log.info(line, 'request');
  }
}

/**
 * U+0000 cannot be stored in PostgreSQL text and has no business in any field: a request carrying it
 * (in the path, the query or a JSON string) is a 400 here, not a 500 from the store later.
 */
function refuseNulCharacters(app: App): void {
  app.addHook('onRequest', async (request) => {
    if (/%00/.test(request.url)) throw nulCharacter();
  });
  app.removeContentTypeParser('application/json');
  // Bodies are JSON only: text/plain is 415 like every other media type, not a schema error.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, hardenedJsonParser(app));
}

/**
 * A route that declares no body takes none: an object with fields (or any other value) is 400, as an
 * unknown field is anywhere else (docs/errors.md "Errors"). An empty body or `{}` is fine.
 */
function refuseBodyFields(route: { preValidation?: unknown }): void {
  const check = async (request: { body?: unknown }) => {
    const body = request.body;
    if (body === undefined || body === null) return;
    if (typeof body === 'object' && !Array.isArray(body)) {
      const [field] = Object.keys(body);
      if (field === undefined) return;
      throw new AppError(
        'VALIDATION_ERROR',
        `This endpoint takes no request body; unknown field "${field}"`,
        {
          field,
          in: 'body',
        },
      );
    }
    throw new AppError('VALIDATION_ERROR', 'This endpoint takes no request body', { in: 'body' });
  };
  const existing = route.preValidation;
  route.preValidation = existing ? [...[existing].flat(), check] : check;
}

/**
 * A body whose every field is optional may be left out (`curl -X POST` with no data): it counts as
 * `{}`. A body with required fields still answers 400 naming the first one.
 */
function defaultEmptyBody(route: { schema?: { body?: unknown }; preValidation?: unknown }): void {
  const body = route.schema?.body as { type?: unknown; required?: unknown[] } | undefined;
  // Only an object body has fields to leave out (POST /event takes any body, or none).
  if (body?.type !== 'object' || (body.required ?? []).length > 0) return;
  const fill = async (request: { body?: unknown }) => {
    request.body ??= {};
  };
  const existing = route.preValidation;
  route.preValidation = existing ? [...[existing].flat(), fill] : fill;
}
