import { isIPv4, isIPv6 } from "node:net";
import { setting } from "@/lib/env";

/**
 * The visitor's IP address as a route handler can know it. Next's own server puts the socket's address into
 * `x-forwarded-for` when the request has none; behind proxies the header is a list, client first. With
 * `SUPPORT_TRUSTED_PROXY_HOPS=n` the address the n-th proxy from us saw is taken (the part no client can forge);
 * unset, the first hop. Null when nothing usable is there.
 */
export function clientAddress(headers: Headers, trustedHops = setting("SUPPORT_TRUSTED_PROXY_HOPS")): string | null {
  const hops = (headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
  const chosen = trustedHops > 0 ? hops[Math.max(0, hops.length - trustedHops)] : hops[0];
  const ip = chosen ?? headers.get("x-real-ip")?.trim();
  return ip && isIpLike(ip) ? ip.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "") : null;
}

function isIpLike(s: string): boolean {
  return s.length <= 45 && (/^\d{1,3}(\.\d{1,3}){3}$/.test(s) || (/^[0-9a-f:.]+$/i.test(s) && s.includes(":")));
}

/** The one key of every request that carries no usable address (see `clientKey`). */
export const UNKNOWN_CLIENT = "unknown";

/**
 * Who the per-client limits (lib/widget/limits, lib/identity/attempts) count a request as — never nobody:
 * - an IPv4 address as it is;
 * - an IPv6 address by its /64, the block one home or server holds: stepping through it is one client;
 * - no usable address (a header such as `X-Forwarded-For: unknown`, which some proxies write and any client can send):
 *   one key shared by every such request, so sending junk puts a client in the most crowded bucket rather than
 *   outside every limit.
 */
export function clientKey(headers: Headers, trustedHops?: number): string {
  const ip = clientAddress(headers, trustedHops);
  if (ip && isIPv4(ip)) return ip;
  if (ip && isIPv6(ip)) return slash64(ip);
  return UNKNOWN_CLIENT;
}

/** `2001:db8:4:2::7` → `2001:db8:4:2::/64` (the first four groups, lower case, without leading zeros). */
function slash64(ip: string): string {
  const [head, tail] = ip.toLowerCase().split("::") as [string, string | undefined];
  const groups = (part: string | undefined) => (part ? part.split(":") : []);
  // A dotted IPv4 tail (`64:ff9b::192.0.2.1`) is the last two groups, never among the first four.
  const front = groups(head);
  const back = groups(tail);
  const missing = 8 - front.length - back.length - (back.at(-1)?.includes(".") || front.at(-1)?.includes(".") ? 1 : 0);
  const all = tail === undefined ? front : [...front, ...Array<string>(Math.max(0, missing)).fill("0"), ...back];
  return `${all
    .slice(0, 4)
    .map((g) => (Number.parseInt(g, 16) || 0).toString(16))
    .join(":")}::/64`;
}
