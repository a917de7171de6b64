import { describe, expect, it } from "vitest";
import { appOriginsFromHeaders, isAllowedParentOrigin, normalizeOrigin } from "./origins";

describe("normalizeOrigin", () => {
  it.each([
    ["https://shop.example.com/path?x=1", "https://shop.example.com"],
    ["http://localhost:3100", "http://localhost:3100"],
    ["https://shop.example.com:443", "https://shop.example.com"],
    ["javascript:alert(1)", null],
    ["null", null],
    ["", null],
    [null, null],
    ["file:///etc/passwd", null],
    // A pattern is no origin: as a frame-ancestors source, "https://*" would match every https page.
    ["https://*", null],
    ["https://*.example.com", null],
    ["https://%2a.example.com", null],
    ["https://shop.exämple.com", "https://shop.xn--exmple-cua.com"],
    ["http://[::1]:3000", "http://[::1]:3000"],
    ["http://127.0.0.1:3000", "http://127.0.0.1:3000"],
  ])("%s → %s", (input, expected) => {
    expect(normalizeOrigin(input)).toBe(expected);
  });
});

describe("isAllowedParentOrigin", () => {
  const app = ["http://localhost:3100"];
  it.each([
    ["the app's own origin, empty allow-list", "http://localhost:3100", [], true],
    ["another origin, empty allow-list", "https://evil.example", [], false],
    ["an allowed origin", "https://shop.example.com", ["https://shop.example.com"], true],
    ["an allowed origin written with a path", "https://shop.example.com", ["https://shop.example.com/"], true],
    ["a subdomain of an allowed origin", "https://evil.shop.example.com", ["https://shop.example.com"], false],
    ["same host, other scheme", "http://shop.example.com", ["https://shop.example.com"], false],
    ["same host, other port", "http://localhost:3101", [], false],
    ["opaque origin", "null", ["null"], false],
    ["a wildcard saved before it was refused", "https://*", ["https://*"], false],
  ])("%s", (_name, parent, allowed, expected) => {
    expect(isAllowedParentOrigin(parent as string, allowed as string[], app)).toBe(expected);
  });
});

describe("appOriginsFromHeaders", () => {
  it("uses the host the browser addressed, and the configured URL", () => {
    const prev = process.env.APP_URL;
    process.env.APP_URL = "https://support.example.com/";
    try {
      expect(appOriginsFromHeaders(new Headers({ host: "localhost:3100" }))).toEqual([
        "http://localhost:3100",
        "https://support.example.com",
      ]);
      expect(
        appOriginsFromHeaders(
          new Headers({ host: "internal:3000", "x-forwarded-host": "support.example.com", "x-forwarded-proto": "https" }),
        ),
      ).toEqual(["https://support.example.com"]);
    } finally {
      if (prev === undefined) delete process.env.APP_URL;
      else process.env.APP_URL = prev;
    }
  });
});
