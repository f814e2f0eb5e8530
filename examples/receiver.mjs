#!/usr/bin/env node
// A local HTTP receiver for trying webhooks and the http action: prints each request and answers
// 200 (or the status given as the second argument, to see retries). `node examples/receiver.mjs [port] [status]`
import http from 'node:http';

const port = Number(process.argv[2] ?? 9000);
const status = Number(process.argv[3] ?? 200);
http
  .createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const signed = req.headers['webhook-id'] ? ` (webhook-id ${req.headers['webhook-id']})` : '';
      console.log(`${new Date().toISOString()} ${req.method} ${req.url}${signed}\n  ${body}`);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ received: true }));
    });
  })
  .listen(port, '127.0.0.1', () => console.log(`receiver on http://127.0.0.1:${port}, answering ${status}`));
