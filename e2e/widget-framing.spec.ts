import { expect, test } from "@playwright/test";

// Defence in depth under the bridge's own origin checks: the browser will only frame /widget inside the parent
// origin the embed named, and no other page of the app may be framed at all (clickjacking of the console).
test("the widget may be framed only by the parent it names; other pages not at all", async ({ request }) => {
  const widget = await request.get("/widget?shop=acme&parent=https://shop.example");
  expect(widget.headers()["content-security-policy"]).toBe("frame-ancestors https://shop.example");
  const noParent = await request.get("/widget?shop=acme");
  expect(noParent.headers()["content-security-policy"]).toBe("frame-ancestors 'self'");
  const bogus = await request.get("/widget?shop=acme&parent=javascript:alert(1)");
  expect(bogus.headers()["content-security-policy"]).toBe("frame-ancestors 'self'");
  for (const path of ["/login", "/shop/acme", "/"]) {
    expect((await request.get(path)).headers()["content-security-policy"], path).toBe("frame-ancestors 'self'");
  }
});
