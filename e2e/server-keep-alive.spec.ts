import http from "node:http";
import { expect, test } from "@playwright/test";

// A client that keeps connections alive (Playwright's own request context, a load balancer, a proxy) may send its
// next request on a connection just as the server closes it for being idle: the request fails with ECONNRESET.
// Node's default is to close after 5 s, so a client pausing about that long between two requests could hit it
// (CI did, 6 Dec: `apiRequestContext.get: read ECONNRESET` on the console's runs API). The server keeps an idle
// connection open for 65 s instead (scripts/app-build.ts), longer than clients and proxies keep theirs.
test("an idle keep-alive connection stays open past Node's 5 s default and carries the next request", async ({ baseURL }) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise<{ status: number; keepAlive: string; reused: boolean }>((resolve, reject) => {
      const req = http.get(`${baseURL}/api/health`, { agent }, (res) => {
        res.resume();
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, keepAlive: String(res.headers["keep-alive"]), reused: req.reusedSocket }),
        );
      });
      req.on("error", reject);
    });
  try {
    const first = await get();
    expect(first).toEqual({ status: 200, keepAlive: "timeout=65", reused: false });
    await new Promise((r) => setTimeout(r, 6_500));
    // The same connection: the server did not close it while it was idle.
    expect(await get()).toEqual({ status: 200, keepAlive: "timeout=65", reused: true });
  } finally {
    agent.destroy();
  }
});
