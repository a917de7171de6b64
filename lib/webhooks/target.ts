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
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["ff00::", 8], // multicast
] as const)
  notPublic.addSubnet(address, prefix, "ipv6");

/** Whether an IP address is not on the public internet (IPv4-mapped IPv6 addresses are checked as IPv4). */
export function isPrivateAddress(address: string): boolean {
  const family = net.isIPv6(address) ? "ipv6" : "ipv4";
  return notPublic.check(address, family);
}

export const privateTargetsAllowed = () => env().SUPPORT_WEBHOOK_PRIVATE_TARGETS === "allow";

/** The error a refused target gives (its message is what the delivery log shows). */
export class PrivateTargetError extends Error {
  readonly code = "PRIVATE_TARGET";
  constructor(host: string, address: string) {
    super(
      `refused: ${host} is ${address === host ? "" : `${address}, `}not a public address (SUPPORT_WEBHOOK_PRIVATE_TARGETS=allow delivers to your own network)`,
    );
  }
}

/** Why a URL's host is refused before any lookup (an IP literal or `localhost`), or null. */
export function refusedHost(url: URL): string | null {
  if (privateTargetsAllowed()) return null;
  const host = url.hostname.replace(/^\[|\]$/g, "");
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
