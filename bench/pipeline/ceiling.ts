/**
 * The pipeline benchmark's ceiling: a plain `node:http` server doing the same condition, computation
 * and outbound POST as svc's workflow (keep-alive agent), nothing stored. run.ts serves it from the
 * benchmark's own process; the instruction count (callgrind.ts) runs it alone, under callgrind, as
 * `node --import tsx bench/pipeline/ceiling.ts <receiver url>`, which prints the URL it listens on.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

export async function ceiling(target: string): Promise<{ url: string; close(): void }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const { answers } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const type = 'svc.submission.created';
      if (!(answers.score > 5)) return res.end('{}');
      const out = JSON.stringify({
        type,
        score: answers.score,
        doubled: answers.score * 2,
        label: `${type}:${answers.score}`,
      });
      const call = http.request(
        {
          host: to.hostname,
          port: to.port,
          path: '/',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json' },
        },
        (r) => {
          r.resume();
          r.on('end', () => res.end('{"ok":true}'));
        },
      );
      call.end(out);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { url } = await ceiling(process.argv[2]);
  console.log(url);
  // valgrind acts on callgrind_control's commands only when the process runs: an idle server blocked
  // in epoll would never write its dump. A timer wakes it.
  setInterval(() => {}, 100);
}
