import { expect, seedRefundApproval, test } from "./fixtures/console";

// The live queue follows the event feed from a cursor: when the connection drops, it says so, and when it
// comes back it catches up from the last event it saw — nothing created meanwhile is missed.

test("after a lost connection the queue resyncs from its cursor", async ({ page, as, queue }) => {
  await as("rita");
  await queue.goto();
  const feed = page.locator("[data-feed]");
  await expect(feed).toHaveAttribute("data-feed", "live");

  // The feed goes down (server unreachable for the console's event requests). The long poll already in flight
  // is not cut by the route: it is answered normally (at the latest when its 20 s wait ends), and the next
  // request is the one that fails, so "reconnecting" can take up to the long-poll wait to show.
  await page.route("**/api/console/events**", (route) => route.abort("connectionreset"));
  await expect(feed).toHaveAttribute("data-feed", "reconnecting", { timeout: 35_000 });
  await expect(feed).toContainText("Reconnecting");

  // Work arrives while the console cannot hear about it.
  const missed = await seedRefundApproval(250);
  await page.waitForTimeout(2_000);
  await expect(queue.item(missed.handoffId)).toHaveCount(0);

  // Back: the next (backed-off) poll asks from the old cursor and the queue refetches — no reload, no
  // browser "online" event (which would make TanStack refetch by itself and prove nothing).
  await page.unroute("**/api/console/events**");
  await expect(feed).toHaveAttribute("data-feed", "live", { timeout: 30_000 });
  await expect(queue.item(missed.handoffId)).toBeVisible();
});
