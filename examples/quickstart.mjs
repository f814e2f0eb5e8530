#!/usr/bin/env node
// The README's walk past sign-in, as one runnable script (Node 20+, nothing to install):
// an API key, a subscription whose two-node graph calls a local receiver over HTTP, a webhook to the
// same receiver, an event, the run and the delivery.
//
//   SVC_ALLOW_PRIVATE_NETWORKS=true SVC_BOOTSTRAP_ADMIN_EMAIL=admin@example.com \
//     SVC_BOOTSTRAP_ADMIN_PASSWORD='a long password' npm start        # in one terminal
//   SVC_EMAIL=admin@example.com SVC_PASSWORD='a long password' node examples/quickstart.mjs
//
// SVC_ALLOW_PRIVATE_NETWORKS=true lets webhooks and the http action reach this script's receiver on
// 127.0.0.1 (production allows public https:// targets only). SVC_URL defaults to http://127.0.0.1:8080.
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

const base = `${process.env.SVC_URL ?? 'http://127.0.0.1:8080'}/api/v1`;
const email = process.env.SVC_EMAIL ?? 'admin@example.com';
const password = process.env.SVC_PASSWORD ?? 'a long password';

async function call(method, path, body, token) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return json;
}

const step = (n, what) => console.log(`\n${n}. ${what}`);

// A local receiver standing in for the systems svc talks to: the http action's target and the webhook.
const received = [];
const receiver = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    received.push({ path: req.url, headers: req.headers, body });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${receiver.address().port}`;

step(1, 'Sign in with email and password: an access token (15 minutes by default).');
const login = await call('POST', '/auth/login/credentials', { email, password });
if (!login.access_token) throw new Error('MFA is on for this user: finish with /auth/login/mfa_verify');

step(2, 'Create an API key for scripts: long-lived, limited to the scopes it needs (never more than yours).');
const key = await call(
  'POST',
  '/api_key',
  {
    name: `quickstart ${new Date().toISOString()}`,
    scope_keys: [
      'event_subscription:read',
      'event_subscription:write',
      'workflow:read',
      'workflow:write',
      'webhook:read',
      'webhook:write',
      'plugin:read',
      'plugin:write',
      'folder:write',
    ],
    expires_in: 86400,
  },
  login.access_token,
);
const token = key.token;
console.log(`   ${key.token.slice(0, 12)}... (shown once: store it)`);

step(3, 'An instance of the built-in http plugin: what the graph calls.');
const [httpPlugin] = (await call('GET', '/plugin_definition?name=http', undefined, token)).plugin_definitions;
const instance = await call(
  'POST',
  '/plugin_instance',
  {
    plugin_definition_id: httpPlugin.id,
    display_name: 'receiver',
    enabled: true,
    config_json: { base_url: receiverUrl },
  },
  token,
);

step(4, 'A subscription on svc.folder.created with a two-node graph: COMPUTE a message, then POST it.');
const sub = await call(
  'POST',
  '/event_subscription',
  { name: 'quickstart: announce new folders', event_type: 'svc.folder.created' },
  token,
);
const graph = await call(
  'PUT',
  `/event_subscription/${sub.id}/graph`,
  {
    nodes: [
      {
        key: 'message',
        type: 'COMPUTE',
        config: {
          logic: {
            text: { cat: ['New folder: ', { var: 'event.data.name' }] },
            folder: { var: 'event.subject' },
          },
        },
      },
      {
        key: 'announce',
        type: 'ACTION',
        config: {
          plugin_instance_id: instance.id,
          plugin_action: 'request',
          input_mapping: { method: 'POST', url: '/announce', body: { var: 'nodes.message.output' } },
        },
      },
    ],
    edges: [{ from_node_id: 'message', to_node_id: 'announce' }],
  },
  token,
);
console.log(`   graph version with nodes ${graph.nodes.map((n) => `${n.key} (${n.type})`).join(' -> ')}`);

step(5, 'A webhook to the receiver for the same event type.');
const hook = await call(
  'POST',
  '/webhook',
  { name: 'quickstart', url: `${receiverUrl}/webhook`, event_types: ['svc.folder.created'] },
  token,
);
console.log(`   signing secret ${hook.standard_webhooks_secret.slice(0, 12)}... (shown once: store it)`);

step(6, 'Make something happen: create a folder. Its svc.folder.created event goes through the outbox.');
const folder = await call('POST', '/folder', { name: 'Quickstart' }, token);

step(7, 'The run: every node persisted with its input, output and timing.');
const until = Date.now() + 15_000;
let run;
while (Date.now() < until) {
  const { runs } = await call('GET', `/workflow_run?event_subscription_id=${sub.id}`, undefined, token);
  run = runs[0];
  if (run && run.status !== 'running') break;
  await new Promise((r) => setTimeout(r, 100));
}
if (run?.status !== 'completed') throw new Error(`run did not complete: ${JSON.stringify(run)}`);
const { nodes } = await call('GET', `/workflow_run/${run.id}/node`, undefined, token);
for (const n of nodes) console.log(`   ${n.node_key}: ${n.status} ${JSON.stringify(n.output)}`);
console.log(`   run ${run.id} completed`);

step(8, 'The delivery: signed with Standard Webhooks headers; verify before trusting it.');
while (Date.now() < until && !received.some((r) => r.path === '/webhook'))
  await new Promise((r) => setTimeout(r, 50));
const delivery = received.find((r) => r.path === '/webhook');
if (!delivery) throw new Error('no webhook delivery arrived');
const keyBytes = Buffer.from(hook.standard_webhooks_secret.slice('whsec_'.length), 'base64');
const { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig } = delivery.headers;
const expected = createHmac('sha256', keyBytes).update(`${id}.${ts}.${delivery.body}`).digest();
const verified = sig
  .split(' ')
  .some((s) => s.startsWith('v1,') && timingSafeEqual(Buffer.from(s.slice(3), 'base64'), expected));
if (!verified) throw new Error('the delivery signature did not verify');
const event = JSON.parse(delivery.body);
console.log(
  `   ${event.type} for folder ${event.subject === folder.id ? folder.id : '?'}: delivery verified`,
);
const announce = received.find((r) => r.path === '/announce');
console.log(`   the http action posted: ${announce?.body}`);

receiver.close();
console.log('\nDone. Next: GET /workflow_run/{id}/context, POST /event_subscription/{id}/test, /docs.');
