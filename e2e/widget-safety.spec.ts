import { expect, test } from "@playwright/test";
import { apiStart, eventIdsAfter, SHOP, Storefront } from "./fixtures/widget";

const HOSTILE = "<img src=x onerror=alert(1)><b>bold</b>";

test("markup in a message is shown as literal text, never rendered or run", async ({ page }) => {
  const dialogs: string[] = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  const shop = new Storefront(page);
  await shop.goto();
  await shop.open();
  await shop.send(HOSTILE);
  const mine = shop.messagesFrom("customer").last().locator("p");
  await expect(mine).toHaveText(HOSTILE);
  // Let the agent answer too (it may quote the text back): still nothing rendered.
  await expect(shop.messagesFrom("agent").first()).toBeVisible({ timeout: 20_000 });
  await expect(shop.log.locator("img, b, script, iframe")).toHaveCount(0);
  await page.reload();
  await shop.open();
  await expect(shop.messagesFrom("customer").last().locator("p")).toHaveText(HOSTILE);
  await expect(shop.log.locator("img, b, script, iframe")).toHaveCount(0);
  expect(dialogs).toEqual([]);
});

test.describe("widget API", () => {
  test("a forged or unknown token gets 404 JSON, a missing one 401", async ({ request }) => {
    const forged = await request.post(`/api/widget/${SHOP}/messages`, {
      headers: { authorization: "Bearer forged-token-forged-token-0000" },
      data: { text: "hello" },
    });
    expect(forged.status()).toBe(404);
    expect(forged.headers()["content-type"]).toContain("application/json");
    expect(await forged.json()).toEqual({ code: "NOT_FOUND", message: expect.any(String) });

    const view = await request.get(`/api/widget/${SHOP}/conversation?after=0`, {
      headers: { authorization: "Bearer forged-token-forged-token-0000" },
    });
    expect(view.status()).toBe(404);
    const events = await request.get(`/api/widget/${SHOP}/events`, { headers: { authorization: "Bearer forged-token-forged-token-0000" } });
    expect(events.status()).toBe(404);
    const human = await request.post(`/api/widget/${SHOP}/human`, {
      headers: { authorization: "Bearer forged-token-forged-token-0000" },
      data: {},
    });
    expect(human.status()).toBe(404);

    const missing = await request.post(`/api/widget/${SHOP}/messages`, { data: { text: "hello" } });
    expect(missing.status()).toBe(401);
    expect((await missing.json()).code).toBe("UNAUTHENTICATED");
  });

  test("a token only works for its own shop", async ({ request }) => {
    const { token } = await (await apiStart(request)).json();
    const other = await request.get(`/api/widget/globex/conversation?after=0`, { headers: { authorization: `Bearer ${token}` } });
    expect(other.status()).toBe(404);
  });

  test("bad input is a 400 with a code and a plain message", async ({ request }) => {
    const { token } = await (await apiStart(request)).json();
    const auth = { authorization: `Bearer ${token}` };
    const cases = [
      { name: "bad JSON", headers: { ...auth, "content-type": "application/json" }, data: "{not json" },
      { name: "wrong type", headers: auth, data: { text: 42 } },
      { name: "missing text", headers: auth, data: {} },
      { name: "empty", headers: auth, data: { text: "   " } },
      { name: "oversized", headers: auth, data: { text: "x".repeat(4001) } },
      { name: "not JSON at all", headers: { ...auth, "content-type": "text/plain" }, data: "hello" },
    ];
    for (const c of cases) {
      const res = await request.post(`/api/widget/${SHOP}/messages`, { headers: c.headers, data: c.data });
      expect(res.status(), c.name).toBe(400);
      const body = await res.json();
      expect(body.code, c.name).toBe("INVALID_INPUT");
      expect(typeof body.message, c.name).toBe("string");
      expect(body.message, c.name).not.toMatch(/prisma|stack|error:/i);
    }
    const bigBody = await request.post(`/api/widget/${SHOP}/messages`, { headers: auth, data: { text: "y".repeat(100_000) } });
    expect(bigBody.status()).toBe(413);
    // Nothing of the above reached the conversation.
    const view = await (await request.get(`/api/widget/${SHOP}/conversation?after=0`, { headers: auth })).json();
    expect(view.view.messages).toEqual([]);
  });

  test("a short answer goes out as it is, a long one gzipped", async ({ request }) => {
    // Next gzips every route answer whatever its size (lib/widget/http `json`); a short one is not worth a zlib stream.
    const gzip = { "accept-encoding": "gzip" };
    const { token } = await (await apiStart(request)).json();
    const auth = { ...gzip, authorization: `Bearer ${token}` };
    const short = await request.post(`/api/widget/${SHOP}/messages`, { headers: auth, data: { text: "hi" } });
    expect(short.status()).toBe(202);
    expect(short.headers()["content-encoding"]).toBeUndefined();
    expect(short.headers()["cache-control"]).toBe("no-store, no-transform");
    expect((await short.json()).kind).toMatch(/started|queued/);
    const refused = await request.get(`/api/widget/${SHOP}/conversation?after=0`, { headers: gzip });
    expect(refused.status()).toBe(401);
    expect(refused.headers()["content-encoding"]).toBeUndefined();
    const text = `${"my parcel arrived damaged ".repeat(60)}`.trim();
    const long = await request.post(`/api/widget/${SHOP}/messages`, { headers: auth, data: { text } });
    expect(long.status()).toBe(202);
    expect(long.headers()["content-encoding"]).toBe("gzip");
    expect(long.headers()["cache-control"]).toBe("no-store");
    expect((await long.json()).view.messages.some((m: { text: string }) => m.text === text)).toBe(true);
  });

  test("requests a browser sends from another site are refused, and no CORS is offered", async ({ request }) => {
    const res = await request.post(`/api/widget/${SHOP}/conversation`, {
      headers: { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      data: {},
    });
    expect(res.status()).toBe(403);
    expect(res.headers()["access-control-allow-origin"]).toBeUndefined();
  });

  test("live updates resume from Last-Event-ID without missing anything", async ({ page, request }) => {
    const { token, cursor, view } = await (await apiStart(request)).json();
    const auth = { authorization: `Bearer ${token}` };
    await request.post(`/api/widget/${SHOP}/messages`, { headers: auth, data: { text: "where is my order?" } });
    await expect
      .poll(async () => (await (await request.get(`/api/widget/${SHOP}/conversation?after=0`, { headers: auth })).json()).view.status, {
        timeout: 20_000,
      })
      .toBe("idle");
    // What a client that was away for all of it is owed: the conversation's events since its cursor, as stored.
    const expected = await eventIdsAfter(view.conversationId, BigInt(cursor));
    expect(expected.length).toBeGreaterThanOrEqual(3);
    const newest = expected.at(-1)!.toString();

    // Read the stream the way the iframe does (fetch, token in a header) from a given cursor, until it has sent the
    // newest of them. The feed holds an event back while an older write is still open anywhere on the database server
    // (other specs write at the same time) and reads again at the latest after its 10 s heartbeat: up to 15 s.
    await page.goto(`/widget?shop=${SHOP}`);
    const read = (from: string) =>
      page.evaluate(
        async ({ url, token, from, newest }) => {
          const stop = new AbortController();
          const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, "last-event-id": from }, signal: stop.signal });
          const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
          let text = "";
          const deadline = Date.now() + 15_000;
          while (Date.now() < deadline && !text.includes(`\nid: ${newest}\n`)) {
            const chunk = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now()))]);
            if (!chunk || chunk.done) break;
            text += chunk.value;
          }
          stop.abort();
          return { type: res.headers.get("content-type"), text };
        },
        { url: `/api/widget/${SHOP}/events`, token, from, newest },
      );
    const frames = (text: string) => text.split("\n\n").filter((f) => /^id: \d+/m.test(f));
    const idOf = (f: string) => BigInt(/^id: (\d+)/m.exec(f)![1]!);

    // A client that was away for all of it reconnects with its old cursor and gets every event since, in order.
    const all = await read(cursor);
    expect(all.type).toContain("text/event-stream");
    const ids = frames(all.text).map(idOf);
    expect(ids).toEqual(expected);
    expect(ids.every((id, i) => id > BigInt(cursor) && (i === 0 || id > ids[i - 1]!))).toBe(true);
    const seqs = frames(all.text)
      .filter((f) => f.includes("event: message.created"))
      .map((f) => JSON.parse(/^data: (.*)$/m.exec(f)![1]!).seq);
    expect(seqs.slice(0, 2)).toEqual([1, 2]);
    // Frames carry no internal data (run ids, authors, payloads).
    expect(all.text).not.toMatch(/runId|handoffId|author/);

    // Resuming from the middle returns exactly what came after it.
    const rest = await read(ids[1]!.toString());
    expect(frames(rest.text).map(idOf)).toEqual(ids.slice(2));
  });
});
