/**
 * The offline model served over HTTP, in a process of its own: what `npm run bench` talks to, so the model's work
 * (reading the whole conversation, composing a reply) happens outside the measured process, as Claude's does.
 * Prints `{"port": n}` on stdout once listening. A request may carry the exact reply to give as a scripted step
 * in the `x-offline-step` header (JSON); without it the deterministic support model answers.
 */
import http from "node:http";
import { createOfflineFetch, OfflineScript } from "@/lib/model/offline";

const script = new OfflineScript();
const offlineFetch = createOfflineFetch({ script });

const server = http.createServer(async (req, res) => {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const step = req.headers["x-offline-step"];
    if (typeof step === "string") script.push(JSON.parse(step));
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
    const response = await offlineFetch(`http://offline.model${req.url}`, {
      method: req.method,
      headers,
      body: chunks.length ? Buffer.concat(chunks).toString("utf8") : undefined,
    });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    // Each piece goes out as it is written (a streamed answer arrives over time, as Claude's does), not at the end.
    const reader = response.body?.getReader();
    for (let piece = await reader?.read(); piece && !piece.done; piece = await reader!.read()) res.write(piece.value);
    res.end();
  } catch (err) {
    // Failed while the answer was being written: the client sees the stream cut off (as from the API), never a mix.
    if (res.headersSent) return void res.destroy(err instanceof Error ? err : new Error(String(err)));
    res.writeHead(500, { "content-type": "application/json" });
    res.end(JSON.stringify({ type: "error", error: { type: "api_error", message: err instanceof Error ? err.message : String(err) } }));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 })}\n`);
});
process.on("disconnect", () => process.exit(0));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
