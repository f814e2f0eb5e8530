import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';
import { VERSION } from '../version.js';
import type { Access } from './access.js';

/**
 * The OpenAPI document's shape: what every operation must declare (summary, operationId, tags), what
 * its access implies (security, 401/403), what its path implies (404), and the document-level facts
 * (servers, licence, tag descriptions). Routes declare their own summary and operationId next to the
 * schema; `describeOperation` adds the rest and refuses a route that forgot them, at start-up.
 */

/** Each tag of the document and what it groups, in the order the docs page shows them. */
const TAGS: Record<string, string> = {
  auth: 'Sign-in: credentials, MFA, refresh tokens, password reset, external IdP, devices',
  users: 'Users and the signed-in user',
  roles: 'Roles and who holds them',
  scopes: 'The scope catalogue and what each role grants',
  'api keys': 'Long-lived keys that never exceed their creator',
  devices: 'Registered devices',
  vault: 'Encrypted secrets and variables referenced as $secret: and $var:',
  plugins: 'Plugin definitions, configured instances, and invoking an action',
  events: 'Event types and the outbox',
  'event subscriptions': 'What runs when an event arrives: conditions and workflow graphs',
  workflows: 'Runs, their nodes, simulation and the expression evaluator',
  webhooks: 'Signed HTTP deliveries of events, with retries and a delivery log',
  questionnaires: 'Questionnaires, their revisions and publishing',
  folders: 'The folder tree questionnaires live in',
  permissions: 'Who may see or manage a folder or questionnaire',
  config: 'Effective questionnaire configuration',
  enrollments: 'Responders enrolled into questionnaires, and their consent',
  submissions: 'Answers to published questionnaires',
  analytics: 'Embedded BI dashboards',
};

/** The short guide at the top of the docs page (Markdown). */
const GUIDE = `svc is an access-controlled event, workflow and integration service: users, roles and scopes,
API keys, CloudEvents through a transactional outbox, subscriptions that run workflow graphs, a vault,
plugins and signed webhooks.

**Getting started**
1. Sign in: \`POST /api/v1/auth/login/credentials\` with \`{"email", "password"}\` answers an
   \`access_token\` (and a \`refresh_token\`; with MFA on, an \`mfa_token\` for
   \`POST /api/v1/auth/login/mfa_verify\`).
2. Press **Authorize** and paste the access token as *bearer*, or an API key (\`svc_key_...\`, made with
   \`POST /api/v1/api_key\`) as *bearer* or *apiKey*.
3. Every operation below says which scopes it needs; \`GET /api/v1/current_user\` shows yours.

**Conventions**
- Lists take \`limit\` (1–250, default 25), \`offset\`, \`sort_by\` and \`sort_dir\` and answer
  \`{<items>, total, limit, offset, has_next, has_previous}\`.
- Unknown fields and query parameters are refused (400). Every error answers \`{code, message, details?}\`;
  a 403 names the \`required_scopes\`.
- Every change publishes a CloudEvent; subscriptions and webhooks react to them
  (\`GET /api/v1/event_definition\` lists the types).

The repository's README and docs/ explain each area; this page is generated from the routes themselves.`;

/** A small wordmark for the docs page's top bar. */
const LOGO = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="120" height="40" viewBox="0 0 120 40">' +
    '<text x="0" y="30" font-family="Helvetica, Arial, sans-serif" font-size="30" font-weight="700" fill="#fff">svc</text>' +
    '<text x="56" y="30" font-family="Helvetica, Arial, sans-serif" font-size="13" fill="#cfd8dc">API</text></svg>',
);

/** The interactive reference at /docs (Swagger UI, served from the package: nothing is fetched elsewhere). */
export const docsPageOptions: FastifySwaggerUiOptions = {
  routePrefix: '/docs',
  logo: { type: 'image/svg+xml', content: LOGO, href: '/docs', target: '_self' },
  theme: { title: 'svc API reference' },
  uiConfig: { deepLinking: true, displayOperationId: false, docExpansion: 'list', tryItOutEnabled: false },
};

export const openapiOptions: FastifyDynamicSwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'svc',
      version: VERSION,
      description: GUIDE,
      // package.json says UNLICENSED: no SPDX licence applies, so a LicenseRef (SPDX's form for others).
      license: { name: 'Proprietary (UNLICENSED)', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: '/', description: 'this svc instance' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'JWT access token or svc_key_ API key' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' },
      },
    },
  },
  // Schemas carrying an $id (ErrorBody and the records) become named components instead of def-N.
  refResolver: {
    buildLocalReference: (json, _baseUri, _fragment, i) =>
      typeof json.$id === 'string' ? json.$id : `def-${i}`,
  },
  transform: ({ schema, url }) => ({ schema: documentedSchema(schema as Record<string, unknown>), url }),
  transformObject: (doc) => describeResponses(unwrapNamed((doc as { openapiObject: object }).openapiObject)),
};

const errorRef = { $ref: 'ErrorBody#' };

/**
 * Adds to a route's schema what its access and path imply, in place (the route's serialisers use the
 * same responses): security and the 400/401/403/404 answers. Called once per route at registration;
 * `operationIds` holds the ids of the app's routes so far (each must be unique).
 */
export function describeOperation(
  route: { method: string; url: string; schema: Record<string, unknown> },
  access: Access,
  operationIds: Set<string>,
): void {
  const { method, url, schema } = route;
  if (schema.hide) return;
  const id = schema.operationId;
  if (typeof schema.summary !== 'string' || typeof id !== 'string' || !Array.isArray(schema.tags)) {
    throw new Error(`route ${method} ${url} declares no summary, operationId or tags`);
  }
  if (operationIds.has(id)) throw new Error(`route ${method} ${url}: operationId ${id} is already used`);
  operationIds.add(id);
  schema.response ??= {};
  const response = schema.response as Record<string, unknown>;
  response['400'] ??= errorRef;
  if (url.includes('/:')) response['404'] ??= errorRef;
  if (access.kind === 'public') {
    schema.security = [];
    return;
  }
  const scopes = access.kind === 'scoped' ? [...access.scopes] : [];
  schema.security = [{ bearer: scopes }, { apiKey: scopes }];
  response['401'] ??= errorRef;
  response['403'] ??= errorRef;
  if (access.kind === 'scoped') {
    schema['x-required-scopes'] = { scopes, mode: access.mode };
    const line = `Requires ${access.mode === 'all' ? 'all' : 'any'} of: \`${scopes.join('`, `')}\`.`;
    schema.description = schema.description ? `${schema.description}\n\n${line}` : line;
  }
}

/**
 * The document's copy of a route schema. Query parameters that have a default are optional to a
 * client (the server fills them in): TypeBox lists them as required, which would make generated
 * clients demand `limit`, `offset`, `sort_by` and `sort_dir` on every list call.
 */
function documentedSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...schema };
  const query = schema.querystring as
    | { properties?: Record<string, { default?: unknown }>; required?: string[] }
    | undefined;
  if (query?.properties && query.required) {
    const required = query.required.filter((p) => query.properties?.[p]?.default === undefined);
    out.querystring = { ...query, required };
  }
  // @fastify/swagger names a schema that has an $id only where it is nested: a named record answered
  // or sent whole is nested one level here, and `unwrapNamed` turns the wrapper into a plain $ref.
  if (named(schema.body)) out.body = { allOf: [schema.body] };
  if (schema.response && typeof schema.response === 'object') {
    out.response = Object.fromEntries(
      Object.entries(schema.response).map(([status, s]) => [status, named(s) ? { allOf: [s] } : s]),
    );
  }
  return out;
}

const RESPONSE_TEXT: Record<string, string> = {
  '200': 'OK',
  '202': 'Accepted',
  '400': 'Invalid request (the body names the field and what is allowed)',
  '401': 'Not authenticated, or the credential is invalid or expired',
  '403': 'Authenticated, but lacking a required scope (details.required_scopes names them)',
  '404': 'No such resource, or not one the caller may see',
  '409': 'Conflicts with the current state',
  '422': 'Understood but cannot be carried out',
  '503': 'Not available now (details say why)',
};

/** Gives each answer a description of what its status means instead of "Default Response". */
function describeResponses(doc: unknown): Record<string, unknown> {
  const paths = (
    doc as { paths: Record<string, Record<string, { responses?: Record<string, { description?: string }> }>> }
  ).paths;
  for (const operations of Object.values(paths)) {
    for (const op of Object.values(operations)) {
      for (const [status, answer] of Object.entries(op.responses ?? {})) {
        if (answer.description === 'Default Response') answer.description = RESPONSE_TEXT[status] ?? 'Answer';
      }
    }
  }
  return doc as Record<string, unknown>;
}

const named = (s: unknown): boolean => typeof (s as { $id?: unknown } | undefined)?.$id === 'string';

/** `{allOf: [{$ref}]}` (the wrapper `documentedSchema` adds) becomes `{$ref}`, everywhere in the document. */
function unwrapNamed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(unwrapNamed);
  if (!node || typeof node !== 'object') return node;
  const o = node as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length === 1 && Array.isArray(o.allOf) && o.allOf.length === 1) {
    const only = o.allOf[0] as Record<string, unknown>;
    if (Object.keys(only).length === 1 && typeof only.$ref === 'string') return only;
  }
  return Object.fromEntries(keys.map((k) => [k, unwrapNamed(o[k])]));
}
