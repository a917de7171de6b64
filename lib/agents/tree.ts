// The specialists of a run as a tree, for people (the run inspector, the CLI, the JSON export): each specialist call
// of the run's own agent, what the specialist read and wrote (its stored turn), the calls it made — and, nested, the
// specialists it consulted. Built from the scopes alone: a call's `scope` names the specialist it was raised in, and a
// specialist call's own scope is `scopeOf(its tool_use id)`.
import { specialistOf } from "./specialists";
import { scopeOf } from "./namespace";

interface CallLike {
  id: string;
  toolUseId: string;
  name: string;
  status: string;
  scope: string | null;
}
interface TurnLike {
  scope: string;
  specialist: string;
  status: string;
  messages: unknown;
}
interface ModelCallLike {
  scope: string | null;
}

export interface SpecialistNode<C extends CallLike, M extends ModelCallLike> {
  /** the outer call that ran the specialist */
  call: C;
  title: string;
  scope: string;
  /** running | waiting (for a person or a retry) | done | failed | not started */
  status: string;
  /** the specialist's own messages, exactly as sent and received */
  messages: unknown;
  calls: C[];
  modelCalls: M[];
  children: Array<SpecialistNode<C, M>>;
}

export function specialistTree<C extends CallLike, M extends ModelCallLike>(
  calls: C[],
  turns: TurnLike[],
  modelCalls: M[],
): Array<SpecialistNode<C, M>> {
  const nodesIn = (scope: string | null, depth: number): Array<SpecialistNode<C, M>> =>
    depth > 8
      ? []
      : calls
          .filter((c) => c.scope === scope && specialistOf(c.name))
          .map((call) => {
            const own = scopeOf(call.toolUseId);
            const turn = turns.find((t) => t.scope === own);
            return {
              call,
              title: specialistOf(call.name)!.title,
              scope: own,
              status: turn?.status ?? "not started",
              messages: turn?.messages ?? [],
              calls: calls.filter((c) => c.scope === own),
              modelCalls: modelCalls.filter((m) => m.scope === own),
              children: nodesIn(own, depth + 1),
            };
          });
  return nodesIn(null, 0);
}
