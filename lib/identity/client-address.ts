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
