import net from 'node:net';

/**
 * A plain TCP listener on a loopback port that counts the connections made to it and the bytes they
 * carried (a TLS ClientHello is bytes): the SSRF tests' proof that nothing connected.
 */
export async function countingListener() {
  const seen = { connections: 0, bytes: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    seen.connections++;
    sockets.add(socket);
    socket.on('data', (b) => {
      seen.bytes += b.length;
    });
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    seen,
    port: (server.address() as net.AddressInfo).port,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
