import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { AppError } from "@/lib/errors";
import { signCustomerIdentity, verifyCustomerIdentity } from "./identity";

const acme = { slug: "acme", widgetSecret: "acme-secret" };
const NOW = new Date("2026-11-30T12:00:00Z");
const s = Math.floor(NOW.getTime() / 1000);

const raw = (claims: Record<string, unknown>, secret = acme.widgetSecret, alg = "HS256") =>
  new SignJWT(claims).setProtectedHeader({ alg }).sign(new TextEncoder().encode(secret));

async function refusal(token: unknown) {
  try {
    await verifyCustomerIdentity(acme, token, NOW);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("UNAUTHENTICATED");
    return (err as AppError).message; // internal message: says why
  }
  throw new Error("token was accepted");
}

describe("verifyCustomerIdentity", () => {
  it("accepts a token the shop signed, normalising the email", async () => {
    const token = await signCustomerIdentity(acme.widgetSecret, " Dana@Example.com ", 600, { shop: "acme", now: NOW });
    await expect(verifyCustomerIdentity(acme, token, NOW)).resolves.toEqual({
      email: "dana@example.com",
      expiresAt: new Date((s + 600) * 1000),
    });
  });

  it("folds only A–Z: an address that merely case-folds to another (a Kelvin sign for a k) stays itself", async () => {
    const kelvin = await raw({ sub: "A\u212Aim@Example.org", iat: s, exp: s + 60 });
    await expect(verifyCustomerIdentity(acme, kelvin, NOW)).resolves.toMatchObject({ email: "a\u212Aim@example.org" });
    const dotted = await signCustomerIdentity(acme.widgetSecret, "\u0130da@example.com", 600, { shop: "acme", now: NOW });
    await expect(verifyCustomerIdentity(acme, dotted, NOW)).resolves.toMatchObject({ email: "\u0130da@example.com" });
  });

  it("accepts a token without aud (the secret alone binds it to the shop)", async () => {
    const token = await raw({ sub: "dana@example.com", iat: s, exp: s + 60 });
    await expect(verifyCustomerIdentity(acme, token, NOW)).resolves.toMatchObject({ email: "dana@example.com" });
  });

  it.each([
    ["expired", () => raw({ sub: "dana@example.com", iat: s - 7200, exp: s - 3600 }), /ERR_JWT_EXPIRED/],
    ["wrong secret", () => raw({ sub: "dana@example.com", iat: s, exp: s + 60 }, "other"), /SIGNATURE/],
    ["no exp", () => raw({ sub: "dana@example.com", iat: s }), /CLAIM/],
    ["no iat", () => raw({ sub: "dana@example.com", exp: s + 60 }), /CLAIM/],
    ["no sub", () => raw({ iat: s, exp: s + 60 }), /CLAIM/],
    ["lifetime over an hour", () => raw({ sub: "dana@example.com", iat: s, exp: s + 3601 }), /lifetime/],
    [
      "iat and exp both hours ahead",
      () => raw({ sub: "dana@example.com", iat: s + 2 * 3600, exp: s + 2 * 3600 + 60 }),
      /exp too far|iat in the future/,
    ],
    ["iat in the future", () => raw({ sub: "dana@example.com", iat: s + 600, exp: s + 1200 }), /future/],
    ["another shop's audience", () => raw({ sub: "dana@example.com", iat: s, exp: s + 60, aud: "shop:globex" }), /audience/],
    ["sub not an email", () => raw({ sub: "dana", iat: s, exp: s + 60 }), /email/],
    [
      "HS512 instead of HS256",
      () => raw({ sub: "dana@example.com", iat: s, exp: s + 60 }, acme.widgetSecret.padEnd(64, "x"), "HS512"),
      /ALG|SIGNATURE/,
    ],
  ])("refuses %s", async (_name, make, why) => {
    expect(await refusal(await make())).toMatch(why);
  });

  it.each([[undefined], [""], ["not.a.jwt"], [42], ["x".repeat(5000)]])("refuses garbage %#", async (token) => {
    await refusal(token);
  });

  it("refuses alg none", async () => {
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    await refusal(`${b64({ alg: "none" })}.${b64({ sub: "dana@example.com", iat: s, exp: s + 60 })}.`);
  });

  it("never puts the reason in the message shown to the customer", async () => {
    try {
      await verifyCustomerIdentity(acme, await raw({ sub: "dana@example.com", iat: s - 7200, exp: s - 3600 }), NOW);
    } catch (err) {
      expect((err as AppError).toJSON().message).toBe(
        "We couldn't confirm your sign-in. Please refresh the page, or continue without signing in.",
      );
    }
  });
});

describe("signCustomerIdentity", () => {
  it("refuses to mint a token that would outlive the ceiling", async () => {
    await expect(signCustomerIdentity("k", "dana@example.com", 3601)).rejects.toThrow();
    await expect(signCustomerIdentity("k", "dana@example.com", 0)).rejects.toThrow();
    await expect(signCustomerIdentity("", "dana@example.com", 60)).rejects.toThrow();
  });
});

describe("after a secret rotation", () => {
  const rotated = {
    slug: "acme",
    widgetSecret: "acme-new-secret",
    widgetSecretPrevious: acme.widgetSecret,
    widgetSecretPreviousUntil: new Date(NOW.getTime() + 3_600_000),
  };
  const signedWith = (secret: string) => signCustomerIdentity(secret, "dana@example.com", 600, { shop: "acme", now: NOW });

  it("verifies tokens signed with the new secret, and with the previous one during the overlap", async () => {
    await expect(verifyCustomerIdentity(rotated, await signedWith("acme-new-secret"), NOW)).resolves.toMatchObject({
      email: "dana@example.com",
    });
    await expect(verifyCustomerIdentity(rotated, await signedWith(acme.widgetSecret), NOW)).resolves.toMatchObject({
      email: "dana@example.com",
    });
  });

  it("refuses the previous secret once the overlap is over, and any other secret", async () => {
    const after = new Date(rotated.widgetSecretPreviousUntil.getTime() + 1000);
    const old = await signCustomerIdentity(acme.widgetSecret, "dana@example.com", 600, { shop: "acme", now: after });
    await expect(verifyCustomerIdentity(rotated, old, after)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    await expect(verifyCustomerIdentity(rotated, await signedWith("someone-else"), NOW)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
  });

  it("does not give a token refused for another reason a second chance with the previous secret", async () => {
    const expired = await raw({ sub: "dana@example.com", iat: s - 7200, exp: s - 3600 });
    expect(await verifyCustomerIdentity(rotated, expired, NOW).catch((e: Error) => e.message)).toMatch(/ERR_JWT_EXPIRED/);
  });
});
