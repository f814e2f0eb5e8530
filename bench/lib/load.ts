import { Worker } from 'node:worker_threads';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

// The load generator runs in a worker thread (its own core), keeping `connections` requests in flight.
const GENERATOR = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { url, headers, durationMs, connections, method, body, okStatus } = workerData;
let seq = 0;
const prefix = Math.random().toString(36).slice(2, 10);
const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const target = new URL(url);
let requests = 0, errors = 0;
const latencies = [];
const end = Date.now() + durationMs;
function one() {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const payload = body === undefined ? undefined : body.replaceAll('{{n}}', prefix + '-' + (seq++));
    const req = http.request({ host: target.hostname, port: target.port, path: target.pathname + target.search, method, agent,
      headers: payload === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(payload) } }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode !== okStatus) errors++;
        requests++;
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        resolve();
      });
    });
    req.on('error', () => { errors++; resolve(); });
    req.end(payload);
  });
}
async function loop() { while (Date.now() < end) await one(); }
const started = Date.now();
Promise.all(Array.from({ length: connections }, loop)).then(() => {
  latencies.sort((a, b) => a - b);
  const seconds = (Date.now() - started) / 1000;
  parentPort.postMessage({ requests, errors, seconds, rps: requests / seconds,
    p50Ms: latencies[Math.floor(latencies.length * 0.5)] ?? 0, p99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0 });
  agent.destroy();
});
`;

export interface LoadRequest {
  /** GET by default. */
  method?: string;
  /** A body sent with every request; each `{{n}}` becomes a number unique to the request (event ids). */
  body?: string;
  /** The status that counts as success (200 by default); any other is an error. */
  okStatus?: number;
}

/** Closed-loop HTTP load against `url` for `durationMs` with `connections` concurrent requests. */
export function load(
  url: string,
  headers: Record<string, string>,
  durationMs = 3000,
  connections = 16,
  request: LoadRequest = {},
): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(GENERATOR, {
      eval: true,
      workerData: {
        url,
        headers,
        durationMs,
        connections,
        method: request.method ?? 'GET',
        body: request.body,
        okStatus: request.okStatus ?? 200,
      },
    });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
