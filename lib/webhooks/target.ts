// Where a webhook may be delivered. A shop's admin chooses the URL, and the server posts to it from inside the
// operator's network: without a check, an endpoint at 127.0.0.1:5432, 169.254.169.254 (a cloud's metadata service)
// or 10.x would make the product a proxy into that network, and the delivery log would tell the admin what answered.
// So an address that is not on the public internet is refused — at the moment of connecting, on the address the
// connection would actually use (a name that resolves differently on each lookup gains nothing) — unless the operator
// allows private targets (SUPPORT_WEBHOOK_PRIVATE_TARGETS=allow: a receiver on the same machine or network, tests).
import dns from "node:dns";
import type { LookupFunction } from "node:net";
import net from "node:net";
import { env } from "@/lib/env";

const notPublic = new net.BlockList();
for (const [address, prefix] of [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata services
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const)
  notPublic.addSubnet(address, prefix, "ipv4");
for (const [address, prefix] of [
  ["::", 96], // unspecified, loopback, and IPv4-compatible (::a.b.c.d, deprecated: never a public receiver)
  ["100::", 64], // discard-only
  ["2001::", 32], // Teredo: its server and (obfuscated) client addresses are IPv4
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const)
  notPublic.addSubnet(address, prefix, "ipv6");

/** Whether an IP address is not on the public internet (an IPv6 address that carries an IPv4 one: as that one). */
export function isPrivateAddress(address: string): boolean {
  if (!net.isIPv6(address)) return notPublic.check(address, "ipv4");
  if (notPublic.check(address, "ipv6")) return true; // IPv4-mapped addresses (::ffff:a.b.c.d) are checked as IPv4
  const carried = carriedIPv4(address);
  return carried !== null && notPublic.check(carried, "ipv4");
}

/**
 * The IPv4 address a translated IPv6 one reaches: NAT64 (64:ff9b::/96, and the local-use 64:ff9b:1::/48) carries it
 * in its last 32 bits, 6to4 (2002::/16) in the 32 after the prefix. null for any other address.
 */
function carriedIPv4(address: string): string | null {
  const words = ipv6Words(address);
  if (!words) return null;
  const ipv4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const nat64 = words[0] === 0x64 && words[1] === 0xff9b && (words.slice(2, 6).every((w) => w === 0) || words[2] === 1);
  if (nat64) return ipv4(words[6]!, words[7]!);
  if (words[0] === 0x2002) return ipv4(words[1]!, words[2]!);
  return null;
}

/** The eight 16-bit words of an IPv6 address (with `::` expanded and a trailing dotted IPv4 part converted). */
function ipv6Words(address: string): number[] | null {
  let text = address.split("%")[0]!;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const part = (s: string | undefined) => (s ? s.split(":").map((w) => Number.parseInt(w, 16)) : []);
  const left = part(head);
  const right = part(tail);
  const words = tail === undefined ? left : [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : null;
}

export const privateTargetsAllowed = () => env().SUPPORT_WEBHOOK_PRIVATE_TARGETS === "allow";

/** The error a refused target gives (its message is what the delivery log shows). */
/**
 * A target refused as not public. The message goes into the shop's delivery log: for a name it never says what the
 * name resolved to (a shop's admin must not map the operator's internal names to addresses through it); the address
 * is kept on the error, for the operator's log.
 */
export class PrivateTargetError extends Error {
  readonly code = "PRIVATE_TARGET";
  constructor(
    host: string,
    readonly address: string,
  ) {
    super(`refused: ${host} is not a public address (SUPPORT_WEBHOOK_PRIVATE_TARGETS=allow delivers to your own network)`);
  }
}

/** Why a URL's host is refused before any lookup (an IP literal or `localhost`), or null. */
export function refusedHost(url: URL): string | null {
  if (privateTargetsAllowed()) return null;
  // `localhost.` is `localhost` (the root's dot is part of every name, most leave it out).
  const host = url.hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase();
  if (net.isIP(host) && isPrivateAddress(host)) return new PrivateTargetError(host, host).message;
  if (host === "localhost" || host.endsWith(".localhost")) return new PrivateTargetError(host, "the local machine").message;
  return null;
}

/** A `lookup` for node:http that refuses a name resolving to a non-public address (every address is checked). */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 4);
    const list = addresses as dns.LookupAddress[];
    const blocked = privateTargetsAllowed() ? undefined : list.find((a) => isPrivateAddress(a.address));
    if (blocked) return callback(new PrivateTargetError(hostname, blocked.address), "", 4);
    if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    const first = list[0];
    if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 4);
    callback(null, first.address, first.family);
  });
};
