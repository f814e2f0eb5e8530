import net from 'node:net';

/**
 * A TCP proxy in front of a server (here PostgreSQL), for outages a test may cause without touching
 * the shared server: `down()` cuts every connection and refuses new ones (the store restarting, as the
 * processes see it), `stall()` cuts them and accepts new ones without ever answering (a hung store),
 * `up()` serves again on the same port. It also counts round trips (`turns`).
 */
export class TcpProxy {
  port = 0;
  /**
   * Round trips on the connections carried: each time a client speaks after the server has (a
   * connection's first message included), it had waited for an answer before it.
   */
  turns = 0;
  private server: net.Server | undefined;
  /** While true, new connections are accepted and never answered (a store that hangs). */
  private stalled = false;
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly target: { host: string; port: number }) {}

  async up(): Promise<this> {
    this.stalled = false;
    if (this.server) return this;
    const server = net.createServer((client) => {
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      client.on('error', () => {});
      if (this.stalled) return;
      const upstream = net.connect(this.target);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      let serverSpoke = true;
      client.on('data', () => {
        if (serverSpoke) this.turns++;
        serverSpoke = false;
      });
      upstream.on('data', () => {
        serverSpoke = true;
      });
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Cuts every connection; new ones are accepted and left unanswered until `up()`. */
  async stall(): Promise<void> {
    this.stalled = true;
    for (const s of this.sockets) s.destroy();
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise((r) => server.close(r));
  }

  /** `url` with its host and port replaced by the proxy's. */
  route(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }
}
