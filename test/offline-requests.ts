// What a scripted offline model step asks of the request it answers (tests that script several agents at once).
import type { OfflineRequest } from "@/lib/model/offline/types";

/** Whether the request is a specialist's (lib/agents/specialists), not the front-line agent's. */
export function isSpecialistRequest(req: OfflineRequest): boolean {
  const system = typeof req.system === "string" ? req.system : (req.system ?? []).map((b) => b.text).join("\n");
  return !system.startsWith("You are the front") && /specialist of an online shop/.test(system);
}

/** Whether the request's last message answers tool calls (it carries tool_result blocks). */
export function answersTools(req: OfflineRequest): boolean {
  const last = req.messages[req.messages.length - 1]!;
  return Array.isArray(last.content) && last.content.some((b) => (b as { type: string }).type === "tool_result");
}
