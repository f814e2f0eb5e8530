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
const { url, headers, durationMs, connections } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const target = new URL(url);
let requests = 0, errors = 0;
const latencies = [];
const end = Date.now() + durationMs;
function one() {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const req = http.request({ host: target.hostname, port: target.port, path: target.pathname + target.search, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode !== 200) errors++;
        requests++;
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        resolve();
      });
    });
    req.on('error', () => { errors++; resolve(); });
    req.end();
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

/** Closed-loop HTTP load against `url` for `durationMs` with `connections` concurrent requests. */
export function load(
  url: string,
  headers: Record<string, string>,
  durationMs = 3000,
  connections = 16,
): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(GENERATOR, {
      eval: true,
      workerData: { url, headers, durationMs, connections },
    });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
