import { describe, expect, it } from "vitest";
import { maskAddress } from "./mask-address";
import { clientAddress, clientKey, UNKNOWN_CLIENT } from "./client-address";
import { postcodesMatch } from "./normalise";
import { presentOrder } from "@/lib/tools/order-helpers";

describe("maskAddress", () => {
  it.each([
    [{ line1: "214 Alder Street", city: "Portland", postalCode: "97204", country: "US" }, "…reet, Portland 97…, US", "97", "reet"],
    [
      { line1: "10 Downing Street", line2: "Flat 4B", city: "London", postalCode: "SW1A 2AA", country: "GB" },
      "…reet, London SW1…, GB",
      "SW1",
      "reet",
    ],
    [{ line1: "1 Main", city: "Boston", postalCode: "0210", country: "US" }, "…ain, Boston 02…, US", "02", "ain"],
    [{ line1: "", city: "Austin", postalCode: "", country: "US" }, "Austin, US", "", ""],
  ])("%o → %s", (address, masked, postcodeStarts, streetEnds) => {
    expect(maskAddress(address)).toEqual({
      city: address.city,
      country: address.country,
      postcode_starts: postcodeStarts,
      street_ends: streetEnds,
      masked,
    });
  });

  it("never keeps the street number, the second line, or most of the postcode", () => {
    const out = JSON.stringify(
      maskAddress({ line1: "214 Alder Street", line2: "Apt 7", city: "Portland", postalCode: "97204", country: "US" }),
    );
    for (const secret of ["214", "Alder", "Apt 7", "97204", "204"]) expect(out).not.toContain(secret);
  });

  it("is what lookup_order shows of an order's delivery address", () => {
    const body = presentOrder({
      number: "A-1001",
      status: "delivered",
      placedAt: new Date("2025-05-01T10:00:00Z"),
      totalCents: 4250,
      refundedCents: 0,
      note: null,
      shipments: [],
      shippingAddress: { line1: "214 Alder Street", city: "Portland", postalCode: "97204", country: "US" },
    } as unknown as Parameters<typeof presentOrder>[0]);
    expect(body.shipping_address).toMatchObject({ masked: "…reet, Portland 97…, US" });
    expect(JSON.stringify(body)).not.toMatch(/Alder|97204/);
  });

  it("is null for anything that is not an address", () => {
    expect(maskAddress(null)).toBeNull();
    expect(maskAddress("214 Alder Street")).toBeNull();
  });
});

describe("postcodesMatch", () => {
  it.each([
    ["97204", "97204", true],
    [" sw1a 2aa ", "SW1A 2AA", true],
    ["SW1A-2AA", "SW1A 2AA", true],
    ["97204", "97204-1234", true],
    ["97205", "97204", false],
    ["9720", "97204", false],
    ["", "97204", false],
  ])("%s ~ %s → %s", (given, stored, match) => {
    expect(postcodesMatch(given, stored)).toBe(match);
  });
});

describe("clientAddress", () => {
  const h = (init: Record<string, string>) => new Headers(init);
  it("takes x-forwarded-for's first hop by default, else x-real-ip", () => {
    expect(clientAddress(h({ "x-forwarded-for": "203.0.113.7, 10.0.0.1" }))).toBe("203.0.113.7");
    expect(clientAddress(h({ "x-real-ip": "2001:db8::1" }))).toBe("2001:db8::1");
    expect(clientAddress(h({ "x-forwarded-for": "::ffff:127.0.0.1" }))).toBe("127.0.0.1");
  });
  it("with trusted proxies, takes the address the outermost trusted proxy saw (what a client cannot forge)", () => {
    expect(clientAddress(h({ "x-forwarded-for": "1.2.3.4, 203.0.113.7" }), 1)).toBe("203.0.113.7");
    expect(clientAddress(h({ "x-forwarded-for": "1.2.3.4, 203.0.113.7, 10.0.0.2" }), 2)).toBe("203.0.113.7");
  });
  it("is null for nothing usable", () => {
    expect(clientAddress(h({}))).toBeNull();
    expect(clientAddress(h({ "x-forwarded-for": "not an ip; DROP TABLE" }))).toBeNull();
  });
});

describe("clientKey: who the per-client limits count a request as", () => {
  const h = (xff: string) => new Headers({ "x-forwarded-for": xff });
  it("an IPv4 address as it is", () => {
    expect(clientKey(h("203.0.113.7"))).toBe("203.0.113.7");
  });
  it("an IPv6 address by its /64, however it is written", () => {
    for (const written of ["2001:db8:4:2::1", "2001:DB8:4:2:ffff:0:0:9", "2001:0db8:0004:0002::abcd", "2001:db8:4:2::192.0.2.1"])
      expect(clientKey(h(written)), written).toBe("2001:db8:4:2::/64");
    expect(clientKey(h("2001:db8::1"))).toBe("2001:db8:0:0::/64");
    expect(clientKey(h("::1"))).toBe("0:0:0:0::/64");
    expect(clientKey(h("2001:db8:4:3::1"))).not.toBe(clientKey(h("2001:db8:4:2::1")));
  });
  it("no usable address — none, junk, or an address-like string that is none — is one shared key, never no key", () => {
    for (const junk of ["unknown", "", "not an ip; DROP TABLE", ":::::", "1:2", "999.1.1.1"])
      expect(clientKey(h(junk)), junk).toBe(UNKNOWN_CLIENT);
    expect(clientKey(new Headers())).toBe(UNKNOWN_CLIENT);
  });
});
