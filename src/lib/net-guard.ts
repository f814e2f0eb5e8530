/**
 * Outbound network guard (SSRF protection) shared by webhooks and the `http` and `email` plugins.
 *
 * Two layers, both needed:
 * - `assertAllowedUrl` at create/update time: https only, and every address the host resolves to
 *   must be public, so a bad URL is refused with a clear 400 before it is stored.
 * - `guardedDispatcher` at send time: DNS can change between the check and the request (DNS
 *   rebinding), so the connection itself re-resolves through a lookup that refuses non-public
 *   addresses before any socket is opened. `net.connect` never calls `lookup` for an IP-literal
 *   host, so the connector classifies a literal itself and refuses before the base connector runs.
 *   The connected address (`socket.remoteAddress`) is checked once more as a backstop only: for
 *   https it is known after the TLS handshake, too late to keep bytes from reaching the target.
 *
 * With `allowPrivate` (SVC_ALLOW_PRIVATE_NETWORKS=true, for tests and closed networks) any address and
 * plain http are allowed. Redirects are never followed by the dispatcher (no redirect interceptor).
 */
import dns, { type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import type { buildConnector, Dispatcher } from 'undici';
import { undici } from './undici.js';

export class ForbiddenTargetError extends Error {
  /** The refused class (e.g. `loopback`, `private`, `scheme`), for tests and metrics. */
  readonly reason: string;
  constructor(message: string, reason: string) {
    super(message);
    this.name = 'ForbiddenTargetError';
    this.reason = reason;
  }
}

/** Every address a host name resolves to. */
export type HostLookup = (host: string) => Promise<LookupAddress[]>;

export interface GuardOptions {
  allowPrivate: boolean;
  /** How names are resolved, for the checks and the connections alike (default: the system's). */
  lookup?: HostLookup;
}

/** The system's resolver (getaddrinfo: the hosts file, then DNS), every address. */
export const systemLookup: HostLookup = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/**
 * Names resolved by these DNS servers only (SVC_DNS_SERVERS: `ip` or `ip:port`), A and AAAA, not the
 * hosts file: an operator may point svc at a resolver that knows which names are internal.
 */
export function serversLookup(servers: readonly string[]): HostLookup {
  const resolver = new dns.promises.Resolver({ timeout: 2_000, tries: 2 });
  resolver.setServers([...servers]);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses: LookupAddress[] = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (addresses.length === 0)
      throw v4.status === 'rejected' ? v4.reason : new Error(`no address for ${host}`);
    return addresses;
  };
}

/** The lookup of a configuration: its DNS servers when it names some, else the system's. */
export const lookupFor = (servers: readonly string[]): HostLookup =>
  servers.length > 0 ? serversLookup(servers) : systemLookup;

/** Cloud instance-metadata endpoints, named separately so the message says what was hit. */
const METADATA = new Set(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '192.0.0.192']);

const LABELS: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT (100.64.0.0/10) address',
  private: 'a private network address',
  uniqueLocal: 'a private (unique local) IPv6 address',
  reserved: 'a reserved address',
  metadata: 'a cloud metadata address',
  ipv4Mapped: 'an IPv4-mapped IPv6 address',
  ipv4Compatible: 'an IPv4-compatible IPv6 address',
  ipv4Translated: 'an IPv4-translated IPv6 address',
  nat64: 'a NAT64 address of a non-public IPv4 address',
  sixToFour: 'a 6to4 address of a non-public IPv4 address',
  tunnel: 'a tunnelled (Teredo) IPv6 address',
  invalid: 'not an IP address',
};

/** IPv6 prefixes inside 2000::/3 that are not ordinary public unicast. */
const V6_NOT_PUBLIC: Array<[string, number, string]> = [
  ['2001::', 32, 'tunnel'], // Teredo: the real client address is hidden
  ['2001:2::', 48, 'reserved'], // benchmarking
  ['2001:10::', 28, 'reserved'], // ORCHID
  ['2001:20::', 28, 'reserved'], // ORCHIDv2
  ['2001:db8::', 32, 'reserved'], // documentation
  ['3fff::', 20, 'reserved'], // documentation
];

function classifyV4(addr: ipaddr.IPv4): string | null {
  const text = addr.toString();
  if (METADATA.has(text)) return 'metadata';
  const range = addr.range();
  // Only ordinary unicast is public; AS112/AMT anycast have no use as a webhook target either.
  return range === 'unicast' ? null : range;
}

function embeddedV4(addr: ipaddr.IPv6, offsetBytes: number): ipaddr.IPv4 {
  const b = addr.toByteArray();
  return new ipaddr.IPv4(b.slice(offsetBytes, offsetBytes + 4));
}

function classifyV6(addr: ipaddr.IPv6): string | null {
  const text = addr.toNormalizedString();
  if (METADATA.has(addr.toString())) return 'metadata';
  const p = addr.parts;
  if (text === '0:0:0:0:0:0:0:0') return 'unspecified';
  if (text === '0:0:0:0:0:0:0:1') return 'loopback';
  // ::ffff:a.b.c.d, ::a.b.c.d, ::ffff:0:a.b.c.d embed IPv4 that kernels may route to IPv4 directly.
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0) {
    if (p[5] === 0xffff) return 'ipv4Mapped';
    if (p[5] === 0) return 'ipv4Compatible';
  }
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0xffff && p[5] === 0) {
    return 'ipv4Translated';
  }
  // NAT64 well-known prefix: public only when the embedded IPv4 is public.
  if (addr.match(ipaddr.IPv6.parse('64:ff9b::'), 96)) {
    return classifyV4(embeddedV4(addr, 12)) === null ? null : 'nat64';
  }
  if (addr.match(ipaddr.IPv6.parse('64:ff9b:1::'), 48)) return 'nat64'; // local-use NAT64 (RFC 8215)
  if (addr.match(ipaddr.IPv6.parse('2002::'), 16)) {
    return classifyV4(embeddedV4(addr, 2)) === null ? null : 'sixToFour';
  }
  const range: string = addr.range();
  if (['linkLocal', 'multicast', 'uniqueLocal', 'deprecatedSiteLocal'].includes(range)) {
    return range === 'uniqueLocal' ? 'uniqueLocal' : range === 'deprecatedSiteLocal' ? 'reserved' : range;
  }
  // Global unicast is 2000::/3; everything outside it (discard, segment routing, unassigned) is not.
  if (!addr.match(ipaddr.IPv6.parse('2000::'), 3)) return 'reserved';
  for (const [prefix, bits, reason] of V6_NOT_PUBLIC) {
    if (addr.match(ipaddr.IPv6.parse(prefix), bits)) return reason;
  }
  return null;
}

/**
 * The refused class of an IP address, or null when it is a public address.
 * Accepts IPv4, IPv6 (optionally in brackets or with a zone index).
 */
export function classifyAddress(ip: string): string | null {
  let text = ip.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  if (!ipaddr.isValid(text)) return 'invalid';
  const addr = ipaddr.parse(text);
  return addr.kind() === 'ipv4' ? classifyV4(addr as ipaddr.IPv4) : classifyV6(addr as ipaddr.IPv6);
}

function refuse(host: string, ip: string, reason: string): ForbiddenTargetError {
  const what = LABELS[reason] ?? `a non-public address (${reason})`;
  const via = host === ip ? '' : ` (host "${host}" resolves to ${ip})`;
  return new ForbiddenTargetError(
    `Target ${ip} is ${what}${via}; only public addresses are allowed unless SVC_ALLOW_PRIVATE_NETWORKS=true`,
    reason,
  );
}

function checkAddress(host: string, ip: string, allowPrivate: boolean): void {
  if (allowPrivate) return;
  const reason = classifyAddress(ip);
  if (reason !== null) throw refuse(host, ip, reason);
}

/**
 * Throws ForbiddenTargetError unless `url` is an absolute https URL whose host (literal or every
 * resolved address) is public. With `allowPrivate`, http is accepted too and addresses are not checked.
 */
export async function assertAllowedUrl(url: string, opts: GuardOptions): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ForbiddenTargetError(`"${url}" is not an absolute URL`, 'invalid_url');
  }
  const allowed = opts.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!allowed.includes(parsed.protocol)) {
    throw new ForbiddenTargetError(
      opts.allowPrivate
        ? `URL scheme "${parsed.protocol}" is not allowed; use https:// or http://`
        : `URL scheme "${parsed.protocol}" is not allowed; only https:// URLs are accepted`,
      'scheme',
    );
  }
  if (parsed.hostname === '') throw new ForbiddenTargetError('URL has no host', 'invalid_url');
  if (opts.allowPrivate) return;
  // WHATWG URL already normalised decimal/octal/hex IPv4 forms (http://2130706433/ -> 127.0.0.1).
  await resolveTarget(parsed.hostname, opts);
}

/**
 * The address to connect to for `host`, checked before any connection: an IP literal is classified as
 * it is; a name is resolved and refused if any of its addresses is not public. The caller connects to
 * the returned address itself, so a DNS answer that changes afterwards (rebinding) reaches nothing.
 * With `allowPrivate`, the first address as resolved, unchecked.
 */
export async function resolveTarget(
  host: string,
  opts: GuardOptions,
): Promise<{ address: string; family: number }> {
  const bare = host.replace(/^\[|\]$/g, '');
  const family = net.isIP(bare);
  if (family) {
    checkAddress(bare, bare, opts.allowPrivate);
    return { address: bare, family };
  }
  let addresses: LookupAddress[];
  try {
    addresses = await (opts.lookup ?? systemLookup)(bare);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ForbiddenTargetError(`Host "${bare}" could not be resolved (${code})`, 'unresolvable');
  }
  if (addresses.length === 0)
    throw new ForbiddenTargetError(`Host "${bare}" has no addresses`, 'unresolvable');
  for (const a of addresses) checkAddress(bare, a.address, opts.allowPrivate);
  return addresses[0] as LookupAddress;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `net.connect` lookup through `lookup`; with `check`, it refuses the connection if any address is
 * not public (the connection re-resolves, so a name that changed since its check is caught here).
 */
function connectLookup(lookup: HostLookup, check: boolean) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void => {
    lookup(hostname).then(
      (addresses) => {
        try {
          if (addresses.length === 0)
            throw new ForbiddenTargetError(`Host "${hostname}" has no addresses`, 'unresolvable');
          if (check) for (const a of addresses) checkAddress(hostname, a.address, false);
        } catch (e) {
          return callback(e as NodeJS.ErrnoException, []);
        }
        if (options.all) return callback(null, addresses);
        const first = addresses[0] as LookupAddress;
        return callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };
}

/**
 * An undici dispatcher for outbound calls to user-supplied URLs: no redirects (undici follows none
 * without the redirect interceptor), connect/headers/body timeouts, and the address checks above
 * applied to the connection itself.
 */
export function guardedDispatcher(
  opts: GuardOptions & { timeoutMs?: number; connections?: number },
): Dispatcher {
  const timeout = opts.timeoutMs ?? 10_000;
  const { Agent, buildConnector: connector } = undici();
  const base = connector({
    timeout,
    lookup: connectLookup(opts.lookup ?? systemLookup, !opts.allowPrivate) as never,
  });
  const connect: buildConnector.connector = (options, callback) => {
    if (!opts.allowPrivate) {
      // An IP literal skips `lookup`; refuse it here, before a TCP (or TLS) handshake starts.
      const host = options.hostname.replace(/^\[|\]$/g, '');
      if (net.isIP(host)) {
        const reason = classifyAddress(host);
        if (reason !== null) return callback(refuse(host, host, reason), null);
      }
    }
    base(options, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error('connect failed'), null);
      if (!opts.allowPrivate) {
        const remote = socket.remoteAddress;
        const reason = remote ? classifyAddress(remote) : 'invalid';
        if (reason !== null) {
          socket.destroy();
          return callback(refuse(options.hostname, remote ?? 'unknown', reason), null);
        }
      }
      return callback(null, socket);
    });
  };
  return new Agent({
    connect,
    connections: opts.connections ?? null,
    headersTimeout: timeout,
    bodyTimeout: timeout,
    keepAliveTimeout: 4_000,
  });
}
