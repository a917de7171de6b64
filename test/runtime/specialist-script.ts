// ── A scripted model that answers each request by who is asking: the front-line agent or a specialist ──
// Shared by the specialist tests (specialists, specialists-edges, parallel-specialists).
import { createHarness, type Harness } from "../runtime-harness";
import { SPECIALISTS } from "@/lib/agents/specialists";
import type { OfflineRequest, OfflineStep } from "@/lib/model/offline/types";

export type Role = "agent" | "returns" | "delivery";
export const text = (t: string) => ({ type: "text" as const, text: t });
export const use = (id: string, name: string, input: unknown) => ({ type: "tool_use" as const, id, name, input });
export const toolUse = (...uses: ReturnType<typeof use>[]): OfflineStep => ({ reply: { content: uses, stop_reason: "tool_use" } });
export const endTurn = (t: string): OfflineStep => ({ reply: { content: [text(t)], stop_reason: "end_turn" } });

export function roleOf(req: OfflineRequest): Role {
  const system = typeof req.system === "string" ? req.system : (req.system ?? []).map((b) => b.text).join("\n");
  if (system.startsWith("You are the returns & refunds specialist")) return "returns";
  if (system.startsWith("You are the delivery problems specialist")) return "delivery";
  return "agent";
}

/** A fresh harness whose published policy also allows every specialist's tool. */
export async function harnessWithSpecialists(): Promise<Harness> {
  const h = await createHarness();
  await h.publish((r) => ({ ...r, allowedTools: [...r.allowedTools, ...SPECIALISTS.map((s) => s.tool)] }));
  return h;
}
