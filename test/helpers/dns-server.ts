import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import dnsPacket from 'dns-packet';

/** What the server answers for a name: the addresses of the query's type, given how often it was asked. */
export type Zone = (name: string, type: 'A' | 'AAAA', asked: number) => string[];

/**
 * A DNS server on 127.0.0.1 (UDP, the `dns-packet` codec) answering A and AAAA queries from `zone`,
 * with TTL 0, and NXDOMAIN for names it does not know. svc reaches it through SVC_DNS_SERVERS; tests
 * use it for names that resolve to private addresses and for answers that change (DNS rebinding).
 */
export async function startDnsServer(zone: Zone) {
  const asked = new Map<string, number>();
  const socket = dgram.createSocket('udp4');
  socket.on('message', (message, peer) => {
    const query = dnsPacket.decode(message);
    const question = query.questions?.[0];
    if (!question) return;
    const type = question.type === 'AAAA' ? 'AAAA' : 'A';
    const key = `${question.name.toLowerCase()} ${type}`;
    const n = (asked.get(key) ?? 0) + 1;
    asked.set(key, n);
    const addresses =
      question.type === 'A' || question.type === 'AAAA' ? zone(question.name.toLowerCase(), type, n) : [];
    const known =
      zone(question.name.toLowerCase(), type === 'A' ? 'AAAA' : 'A', 0).length + addresses.length > 0;
    const answer = dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE | (known ? 0 : 3), // rcode 3: NXDOMAIN
      questions: [question],
      answers: addresses.map((data) => ({ type, class: 'IN', name: question.name, ttl: 0, data })),
    });
    socket.send(answer, peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    /** For SVC_DNS_SERVERS. */
    address: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    /** How many times `name` was asked for its A (or AAAA) records. */
    asked: (name: string, type: 'A' | 'AAAA' = 'A') => asked.get(`${name} ${type}`) ?? 0,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
