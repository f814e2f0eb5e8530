import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as an OTLP/HTTP JSON export carries it, with ids in hex and attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** 2: error (OTLP status codes). */
  status: number;
  statusMessage: string;
  links: Array<{ traceId: string; spanId: string }>;
  service: string;
  startMs: number;
  endMs: number;
}

/** OTLP/JSON ids are hex strings; base64 is accepted too (some exporters send it). */
const hexId = (id: unknown): string => {
  if (typeof id !== 'string' || id === '') return '';
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
};

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
};
const plainValue = (v: AnyValue): string | number | boolean =>
  v.stringValue ??
  (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
  v.boolValue ??
  (v.doubleValue as number);
const attributesOf = (list: Array<{ key: string; value: AnyValue }> | undefined) =>
  Object.fromEntries((list ?? []).map((a) => [a.key, plainValue(a.value)]));

/**
 * A local OTLP/HTTP receiver (JSON encoding) on 127.0.0.1: what a collector would get, decoded. Every
 * request is counted, whatever it carries, so a test can also show that nothing was sent.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Raw request bodies, as sent (the secrets suite searches them). */
  readonly bodies: string[] = [];
  requests = 0;
  private server: http.Server;
  url = '';

  constructor() {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.requests++;
        const body = Buffer.concat(chunks).toString('utf8');
        this.bodies.push(body);
        try {
          this.take(JSON.parse(body));
        } catch {
          // Not JSON (a protobuf export): counted, not decoded.
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
  }

  private take(request: {
    resourceSpans?: Array<{
      resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
      scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
    }>;
  }): void {
    for (const rs of request.resourceSpans ?? []) {
      const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? []) {
          const status = (s.status ?? {}) as { code?: number; message?: string };
          this.spans.push({
            traceId: hexId(s.traceId),
            spanId: hexId(s.spanId),
            parentSpanId: hexId(s.parentSpanId),
            name: String(s.name),
            kind: Number(s.kind ?? 0),
            attributes: attributesOf(s.attributes as Array<{ key: string; value: AnyValue }>),
            status: status.code ?? 0,
            statusMessage: status.message ?? '',
            links: ((s.links ?? []) as Array<{ traceId: unknown; spanId: unknown }>).map((l) => ({
              traceId: hexId(l.traceId),
              spanId: hexId(l.spanId),
            })),
            service,
            startMs: Number(BigInt(String(s.startTimeUnixNano ?? 0)) / 1_000_000n),
            endMs: Number(BigInt(String(s.endTimeUnixNano ?? 0)) / 1_000_000n),
          });
        }
    }
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The environment that points svc at this receiver, exporting at once. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      OTEL_EXPORTER_OTLP_ENDPOINT: this.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '10',
      ...extra,
    };
  }

  /** The spans named `name` (and matching `where`), waiting up to `ms` for at least `count`. */
  async named(
    name: string,
    where: (s: ReceivedSpan) => boolean = () => true,
    count = 1,
    ms = 10_000,
  ): Promise<ReceivedSpan[]> {
    const until = Date.now() + ms;
    for (;;) {
      const found = this.spans.filter((s) => s.name === name && where(s));
      if (found.length >= count) return found;
      if (Date.now() > until)
        throw new Error(
          `${count} span(s) "${name}" not received; got: ${this.spans.map((s) => s.name).join(', ')}`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
