// A specialist's (agent-as-tool) turn, stored with its parent run: the sub-agent's own messages exactly as they were
// sent and received. One row per scope (lib/agents/namespace); each step of the specialist saves it in the step's own
// statement, so the turn and the calls it proposed always agree.
import { sql } from "kysely";
import { z } from "zod";
import type { Store } from "@/lib/db/kysely";
import { json, type Statement } from "./statement";
import type { ContentBlock } from "./transcript";

export type AgentTurnStatus = "running" | "waiting" | "done" | "failed";

export interface AgentTurnMessage {
  role: "user" | "assistant";
  content: ContentBlock[];
}

export interface AgentTurn {
  id: string;
  scope: string;
  specialist: string;
  messages: AgentTurnMessage[];
  status: AgentTurnStatus;
  version: number;
}

const storedMessages = z
  .array(
    z.object({
      role: z.enum(["user", "assistant"]),
      content: z.array(z.object({ type: z.string() }).passthrough()).min(1),
    }),
  )
  .min(1)
  .refine((m) => m[0]!.role === "user", "a turn starts with the task (a user message)")
  .refine((m) => m.every((x, i) => i === 0 || x.role !== m[i - 1]!.role), "roles alternate");

/** Why a stored turn cannot be used (its messages are not a conversation the model can continue). */
export class AgentTurnUnreadableError extends Error {
  constructor(scope: string, why: string) {
    super(`the stored turn of ${scope} cannot be read: ${why}`);
    this.name = "AgentTurnUnreadableError";
  }
}

/** The stored turn of a scope; null when none was saved. Throws AgentTurnUnreadableError when it cannot be used. */
export async function readAgentTurn(db: Store, runId: string, scope: string): Promise<AgentTurn | null> {
  const row = await db
    .selectFrom("AgentTurn")
    .select(["id", "scope", "specialist", "messages", "status", "version"])
    .where("runId", "=", runId)
    .where("scope", "=", scope)
    .executeTakeFirst();
  if (!row) return null;
  const parsed = storedMessages.safeParse(row.messages);
  if (!parsed.success) throw new AgentTurnUnreadableError(scope, parsed.error.issues.map((i) => i.message).join("; "));
  return { ...row, messages: parsed.data as unknown as AgentTurnMessage[], status: row.status as AgentTurnStatus };
}

/** Saves a scope's turn as it is now (created on its first step, replaced on each later one). */
export function saveAgentTurn(
  s: Statement,
  name: string,
  t: { tenantId: string; runId: string; scope: string; specialist: string; messages: AgentTurnMessage[]; status: AgentTurnStatus },
): void {
  s.insert(
    name,
    "AgentTurn",
    {
      id: sql`gen_random_uuid()::text`,
      tenantId: t.tenantId,
      runId: t.runId,
      scope: t.scope,
      specialist: t.specialist,
      messages: json(t.messages),
      status: t.status,
      updatedAt: sql`now()`,
    },
    {
      onConflict: sql`("runId", scope) DO UPDATE SET messages = EXCLUDED.messages, status = EXCLUDED.status,
        version = "AgentTurn".version + 1, "updatedAt" = now()`,
    },
  );
}

/** Every specialist turn of a run (the run inspector draws the tree from their scopes). */
export async function agentTurnsOfRun(db: Store, runId: string) {
  return db
    .selectFrom("AgentTurn")
    .select(["scope", "specialist", "messages", "status", "version", "createdAt", "updatedAt"])
    .where("runId", "=", runId)
    .orderBy("createdAt")
    .execute();
}
