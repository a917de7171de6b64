/**
 * How fast this machine is right now, for the benchmarks' reports: a fixed piece of single-threaded work of the kind
 * the product does (JSON out and in, strings, small objects, a hash), timed over several rounds. This VM reports no
 * steal time and its load average says little about its host, yet the same code took 1.7–1.9 times the CPU in one
 * hour that it took in another: runs of different hours are compared through this figure, printed with each run.
 */
import { createHash } from "node:crypto";
import { percentile } from "./load/stats";

/** One transcript-like document, the same every time (no randomness, no clock). */
function fixedDocument() {
  const messages = [];
  for (let i = 0; i < 40; i++) {
    messages.push({
      seq: i + 1,
      role: i % 2 ? "assistant" : "user",
      content: [
        { type: "text", text: `Message ${i}: where is my order A-${1000 + i}? It was due on the ${(i % 28) + 1}th.` },
        ...(i % 5 === 4 ? [{ type: "tool_use", id: `toolu_${i}`, name: "lookup_order", input: { order_number: `A-${1000 + i}` } }] : []),
      ],
    });
  }
  return { conversationId: "c_fixed", tenantId: "t_fixed", messages };
}

/** The work of one round; returns a digest so that nothing of it can be optimised away. */
function oneRound(): string {
  const hash = createHash("sha256");
  const doc = fixedDocument();
  for (let i = 0; i < 240; i++) {
    const text = JSON.stringify(doc);
    const back = JSON.parse(text) as typeof doc;
    back.messages.push({ seq: back.messages.length + 1, role: "user", content: [{ type: "text", text: `turn ${i}` }] });
    const counts = new Map<string, number>();
    for (const m of back.messages) for (const b of m.content) counts.set(b.type, (counts.get(b.type) ?? 0) + 1);
    hash.update(text).update(String(counts.get("text")));
  }
  return hash.digest("hex");
}

export interface MachineSpeed {
  /** the median time of one round, ms: the figure to compare */
  medianMs: number;
  /** the quickest round, ms */
  minMs: number;
  rounds: number;
  /** the work's digest: the same on every machine, so long as the work is the same */
  digest: string;
}

/** Times `rounds` rounds of the fixed work, after two that warm the code up. */
export function machineSpeed(rounds = 25): MachineSpeed {
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds must be a positive whole number, not ${rounds}`);
  let digest = oneRound();
  oneRound();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    const d = oneRound();
    times.push(performance.now() - t0);
    if (d !== digest) throw new Error("the fixed work gave two different digests");
    digest = d;
  }
  return { medianMs: percentile(times, 50), minMs: Math.min(...times), rounds, digest };
}

/** The line the benchmarks print. */
export function describeMachineSpeed(s: MachineSpeed): string {
  return `${s.medianMs.toFixed(2)} ms a round (median of ${s.rounds}; quickest ${s.minMs.toFixed(2)})`;
}
