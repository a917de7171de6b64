// A webhook is never a way into the operator's own network: every way of naming a private address is refused, at
// creation when the URL says so and at delivery on the address the connection would use; nothing reaches the target.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseEndpointUrl } from "@/lib/settings/webhooks";
import { sendOnce } from "./deliver";
import { isPrivateAddress, PrivateTargetError, publicOnlyLookup } from "./target";

let server: http.Server;
let port = 0;
let hits = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits++;
    req.resume();
    res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const before = process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS;
beforeEach(() => {
  process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS = "deny"; // the product's default
  hits = 0;
});
afterEach(() => {
  process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS = before;
});

describe("which addresses are private", () => {
  it.each([
    "127.0.0.1",
    "127.9.9.9",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fd12:3456::1",
    "::ffff:127.0.0.1",
    "::ffff:a9fe:a9fe",
    // IPv6 forms that carry an IPv4 address: IPv4-compatible, NAT64 (well-known and local-use prefixes), 6to4
    "::7f00:1",
    "::127.0.0.1",
    "::a9fe:a9fe",
    "64:ff9b::7f00:1",
    "64:ff9b::169.254.169.254",
    "64:ff9b:1::a00:1",
    "2002:7f00:1::1",
    "2002:a9fe:a9fe::",
    // Teredo (its server and client addresses are IPv4, the client's obfuscated), site-local, discard-only
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "fec0::1",
    "100::1",
  ])("%s is refused", (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "93.184.216.34",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808", // NAT64 of 8.8.8.8
    "2002:808:808::1", // 6to4 of 8.8.8.8
    "2001:db9::1",
  ])("%s is public", (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});

describe("delivering", () => {
  const post = (url: string) => sendOnce(url, { "content-type": "application/json" }, "{}", 2_000);

  it.each([
    ["a loopback address", () => `http://127.0.0.1:${port}/hooks`],
    ["the same written in hex", () => `http://0x7f.0.0.1:${port}/hooks`],
    ["the same as one number", () => `http://2130706433:${port}/hooks`],
    ["an IPv4-mapped IPv6 address", () => `http://[::ffff:127.0.0.1]:${port}/hooks`],
    ["a NAT64 address of a loopback one", () => `http://[64:ff9b::7f00:1]:${port}/hooks`],
    ["an IPv4-compatible IPv6 address", () => `http://[::7f00:1]:${port}/hooks`],
    ["localhost", () => `http://localhost:${port}/hooks`],
    ["a name under localhost", () => `http://hooks.localhost:${port}/hooks`],
  ])("to %s is refused with the reason, and nothing is sent", async (_, url) => {
    const result = await post(url());
    expect(result).toMatchObject({ statusCode: null });
    expect(result.error).toMatch(/^refused: .* not a public address/);
    expect(hits).toBe(0);
  });

  it("a name is checked on the address it resolves to, as the connection is made", async () => {
    const looked = await new Promise<{ err: NodeJS.ErrnoException | null }>((resolve) =>
      publicOnlyLookup("localhost", { all: true }, (err) => resolve({ err })),
    );
    expect(looked.err).toBeInstanceOf(PrivateTargetError);
    // The shop's log says the name is refused, never what it resolved to (the operator's network); the error keeps it.
    expect(looked.err?.message).toMatch(/localhost is not a public address/);
    expect(looked.err?.message).not.toMatch(/127\.0\.0\.1|::1/);
    expect((looked.err as PrivateTargetError).address).toMatch(/^(127\.0\.0\.1|::1)$/);
  });

  it("with SUPPORT_WEBHOOK_PRIVATE_TARGETS=allow the same receiver gets the delivery", async () => {
    process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS = "allow";
    expect(await post(`http://127.0.0.1:${port}/hooks`)).toMatchObject({ statusCode: 200, error: null });
    expect(await post(`http://localhost:${port}/hooks`)).toMatchObject({ statusCode: 200, error: null });
    expect(hits).toBe(2);
  });
});

describe("adding an endpoint", () => {
  it.each(["http://127.0.0.1/hooks", "http://[::1]:8080/hooks", "http://169.254.169.254/latest/meta-data", "https://localhost/hooks"])(
    "%s is refused with the field named",
    (url) => {
      expect(() => parseEndpointUrl(url)).toThrow(expect.objectContaining({ code: "INVALID_INPUT", details: { field: "url" } }));
    },
  );

  it("a public name is accepted (it is checked again on every delivery)", () => {
    expect(parseEndpointUrl("https://hooks.example.com/support")).toBe("https://hooks.example.com/support");
  });
});
