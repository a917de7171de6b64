// AGENT AS TOOL — a specialist (lib/agents/specialists) run as one tool call of the run (DESIGN §2.5; seed 003).
// A specialist has its own instructions, tools and messages. Its calls are gated like the agent's own and recorded in
// the run's ToolCall table under its SCOPE, with ids namespaced by the outer tool_use id (lib/agents/namespace). Its
// turn — the messages it sent and received — is saved with the run in the statement of each of its steps
// (lib/store/agent-turns), so:
//  - a gated call inside it PARKS THE WHOLE RUN: its approval handoff (saying which specialist asked) is opened in the
//    same statement as the turn that proposed it; the outer call stays APPROVED — it has not finished;
//  - the decision travels down as data: it settles the inner call's row. When the run continues, the outer call runs
//    again, the turn is read back from the database and only what it still awaits is acted on: a call already run is
//    never run again, a decision already applied is never asked for again;
//  - a stored turn that cannot be read back is never restarted from scratch: the reviewer's approval stays recorded,
//    the outer result tells the model the action did NOT run, and a person is asked to follow up.
// Specialists nest: a specialist's call may run another specialist (its scope namespaced by the inner call's id).
import type Anthropic from "@anthropic-ai/sdk";
import { customerText, shopContext, toolResultText } from "@/lib/agent/framing";
import { namespacedId, scopeOf, unusableToolUseIds } from "@/lib/agents/namespace";
import { type Specialist, specialistOf } from "@/lib/agents/specialists";
import { storeOf } from "@/lib/db/kysely";
import { setting } from "@/lib/env";
import { log } from "@/lib/log";
import { classifyModelError, estimateCostMicros } from "@/lib/model/client";
import { formatCents } from "@/lib/money";
import {
  type AgentTurn,
  type AgentTurnMessage,
  type AgentTurnStatus,
  AgentTurnUnreadableError,
  readAgentTurn,
  saveAgentTurn,
} from "@/lib/store/agent-turns";
import { addModelCall, addShopSpend } from "@/lib/store/model-calls";
import { addToolCalls, callsOfScope, type ToolCallRow } from "@/lib/store/tool-calls";
import { type ContentBlock, toolUseIdsIn, withoutBlankText } from "@/lib/store/transcript";
import { getTool, toolDefinitionsForModel } from "@/lib/tools/registry";
import { ToolError, type ToolErrorBody } from "@/lib/tools/types";
import { exhaustedBudget } from "./budgets";
import type { RuntimeDeps } from "./deps";
import { type Execution, failedSettlement, type RunnableCall } from "./execution";
import { failpoint } from "./failpoints";
import { escalates, gateCalls, readVerification, type UnsavedMoneyCall, unsavedMoneyOf, type Verification } from "./gating";
import { openCeilingEscalation } from "./end";
import { openApprovals } from "./park";
import type { RunState } from "./run-state";
import { StepWrite } from "./step-write";
import {
  approvalStands,
  gatedRow,
  termsToRegate,
  type PhaseCall,
  regateCall,
  runCalls,
  runnableCalls,
  runsBeforeRecording,
  settlePhase,
} from "./phase-calls";

/** Model turns one specialist call may take (a guard: the run's own budgets count every turn too). */
export const MAX_SPECIALIST_TURNS = 6;

const allDefinitions = toolDefinitionsForModel();

/** A specialist's tools: its own subset, narrowed further by the shop's allowlist. */
function toolsOf(specialist: Specialist, state: RunState) {
  const allowed = state.policy.rules.allowedTools;
  return allDefinitions.filter((d) => specialist.tools.includes(d.name) && allowed.includes(d.name));
}

/** What the specialist's step leads to. */
type Step =
  | { kind: "continue" }
  | { kind: "report"; text: string }
  | { kind: "failed"; why: string }
  | { kind: "waits"; waitsFor: NonNullable<Execution["waitsFor"]> }
  | { kind: "model_unavailable"; err: unknown };

/** One specialist call as it runs: where its turn lives and what it works with. */
interface Scope {
  deps: RuntimeDeps;
  state: RunState;
  call: RunnableCall;
  specialist: Specialist;
  /** the specialists' titles from the outermost to this one: who asked, in a handoff */
  path: string[];
  /** `v1:agent_as_tool:<percent-encoded outer tool_use id>:` */
  scope: string;
  turn: AgentTurn;
  /** money calls gated in this tool phase whose rows are not written yet, this specialist's and the ones before it */
  unsaved: UnsavedMoneyCall[];
}

/**
 * Runs (or continues) the specialist of `call`. Every step but the last commits on its own; the last — the turn that
 * asked a person, or the report — is returned as `write`, to commit with the outer step that parks the run or records
 * the outer result. Returns the outer call's outcome.
 */
export async function runSpecialist(
  deps: RuntimeDeps,
  state: RunState,
  call: RunnableCall,
  agent: string,
  /** the specialists it runs inside, outermost first (nesting) */
  within: string[] = [],
  /** money calls the phase's earlier specialists gated and have not written yet: counted by this one's gates */
  unsaved: UnsavedMoneyCall[] = [],
): Promise<Execution> {
  const db = storeOf(deps.db);
  const specialist = specialistOf(agent);
  const started = performance.now();
  const attempt = call.attempts + 1;
  const finish = (settled: Execution["settled"], extra: Partial<Execution> = {}): Execution => ({
    settled,
    written: false,
    activeMs: performance.now() - started,
    escalation: null,
    ...extra,
  });
  if (!specialist) {
    const failure = new ToolError("permission", `Unknown specialist ${agent}.`, false).toBody();
    return finish(failedSettlement(state, call, failure, attempt));
  }

  const scope = scopeOf(call.toolUseId);
  const [stored, inner] = await Promise.all([
    readAgentTurn(db, state.ref.id, scope).catch((err: unknown) => {
      if (err instanceof AgentTurnUnreadableError) return err;
      throw err;
    }),
    callsOfScope(db, state.ref.id, scope),
  ]);
  const turn = stored instanceof AgentTurnUnreadableError ? undefined : stored;
  if (turn === undefined || (!turn && inner.length)) {
    const err =
      turn === undefined
        ? (stored as AgentTurnUnreadableError)
        : new AgentTurnUnreadableError(scope, "it is missing, but calls were raised in it");
    return finish(...unreadable(state, call, specialist, err, inner));
  }
  const verification = await readVerification(db, state.ref.conversationId);
  const sp: Scope = {
    path: [...within, specialist.title],
    deps,
    state,
    call,
    specialist,
    scope,
    unsaved,
    turn: turn ?? {
      id: "",
      scope,
      specialist: specialist.tool,
      messages: [await taskMessage(deps, call, verification)],
      status: "running",
      version: 0,
    },
  };

  let w = new StepWrite(state);
  for (let guard = 0; guard < 4 * MAX_SPECIALIST_TURNS; guard++) {
    let step: Step;
    try {
      const last = sp.turn.messages[sp.turn.messages.length - 1]!;
      step = last.role === "assistant" ? await toolPhaseOf(sp, w, last, verification) : await modelTurnOf(sp, w);
    } catch (err) {
      if (!(err instanceof AgentTurnUnreadableError)) throw err;
      return finish(...unreadable(state, call, specialist, err, await callsOfScope(db, state.ref.id, scope)));
    }
    switch (step.kind) {
      case "continue": {
        save(sp, w, "running");
        await w.run(db);
        // Its calls are written now: later gates read them from the database.
        const written = unsaved.filter((u) => u.owner === scope);
        for (const u of written) unsaved.splice(unsaved.indexOf(u), 1);
        w = new StepWrite(state);
        continue;
      }
      case "waits":
        // The outer call stays APPROVED (unfinished): it runs again when the run continues.
        save(sp, w, "waiting");
        return finish(
          { status: "APPROVED", result: null, isError: false, attempts: call.attempts, nextAttemptAt: null },
          {
            written: true,
            waitsFor: step.waitsFor,
            write: w,
          },
        );
      case "model_unavailable": {
        // The specialist's model could not be reached: the outer call waits for a retry, like any transient failure.
        save(sp, w, "running");
        const cls = classifyModelError(step.err);
        const failure: ToolErrorBody = {
          error_category: "transient",
          is_retryable: cls.retryable,
          message: `The ${specialist.title.toLowerCase()} could not be reached (${cls.kind}).${sp.turn.messages.length > 1 ? ` ${actionsInWords(await callsOfScope(db, state.ref.id, scope))}` : " Nothing was done."}`,
        };
        return finish(failedSettlement(state, call, failure, attempt), { write: w });
      }
      case "report": {
        save(sp, w, "done");
        const actions = await callsOfScope(db, state.ref.id, scope);
        return finish(
          {
            status: "SUCCEEDED",
            result: { specialist: specialist.title, report: step.text, actions: actionsOf(actions) },
            isError: false,
            attempts: attempt,
            nextAttemptAt: null,
          },
          { write: w },
        );
      }
      case "failed": {
        save(sp, w, "failed");
        const actions = await callsOfScope(db, state.ref.id, scope);
        const failure: ToolErrorBody = {
          error_category: "system",
          is_retryable: false,
          message: `The ${specialist.title.toLowerCase()} could not finish: ${step.why} ${actionsInWords(actions)} Do not claim anything else was done.`,
          specialist: specialist.title,
          actions: actionsOf(actions),
        };
        return finish({ status: "FAILED", result: failure, isError: true, attempts: attempt, nextAttemptAt: null }, { write: w });
      }
    }
  }
  throw new Error(`specialist ${scope} made too many steps`);
}

/** The task as the specialist reads it: who the customer is (from the shop's records), then the task as data. */
async function taskMessage(deps: RuntimeDeps, call: RunnableCall, verification: Verification): Promise<AgentTurnMessage> {
  const input = (call.effectiveInput ?? call.input) as { task?: string; order_number?: string };
  let who = "The customer is not verified.";
  if (verification.verifiedCustomerId) {
    const customer = await storeOf(deps.db)
      .selectFrom("Customer")
      .select(["name", "email"])
      .where("id", "=", verification.verifiedCustomerId)
      .executeTakeFirst();
    if (customer) who = `The customer is verified as ${customer.name} <${customer.email}>.`;
  }
  const task = `${input.task ?? ""}${input.order_number ? `\nOrder: ${input.order_number}` : ""}`;
  return {
    role: "user",
    content: [
      { type: "text", text: shopContext(who) },
      { type: "text", text: customerText(task) },
    ],
  };
}

function save(sp: Scope, w: StepWrite, status: AgentTurnStatus): void {
  const { ref } = sp.state;
  w.also((s) =>
    saveAgentTurn(s, s.unique("agent_turn"), {
      tenantId: ref.tenantId,
      runId: ref.id,
      scope: sp.scope,
      specialist: sp.specialist.tool,
      messages: sp.turn.messages,
      status,
    }),
  );
}

/** The specialist's model turn: one request, recorded with its scope; its calls gated and recorded under it. */
async function modelTurnOf(sp: Scope, w: StepWrite): Promise<Step> {
  const { deps, state, specialist } = sp;
  const { ref } = state;
  const turns = sp.turn.messages.filter((m) => m.role === "assistant").length;
  if (turns >= MAX_SPECIALIST_TURNS) return { kind: "failed", why: `it took more than ${MAX_SPECIALIST_TURNS} turns.` };
  const budget = exhaustedBudget(state);
  if (budget) return { kind: "failed", why: budget.reason };

  const maxTokens = setting("SUPPORT_MAX_TOKENS");
  const turnNumber = state.counters.turnsUsed + 1;
  const record = {
    tenantId: ref.tenantId,
    runId: ref.id,
    turn: turnNumber,
    maxTokens,
    throughSeq: sp.call.messageSeq,
    scope: sp.scope,
  };
  let message: Anthropic.Message;
  let latencyMs: number;
  try {
    const response = await deps.model.send({
      system: specialist.system,
      tools: toolsOf(specialist, state),
      messages: sp.turn.messages as Anthropic.MessageParam[],
      maxTokens,
    });
    message = response.message;
    latencyMs = response.latencyMs;
  } catch (err) {
    const errorText = err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 500) : String(err);
    w.also((s) =>
      addModelCall(s, s.unique("model_call"), {
        ...record,
        model: deps.model.model,
        stopReason: null,
        error: `${classifyModelError(err).kind}: ${errorText}`,
        latencyMs: 0,
        response: null,
      }),
    );
    return { kind: "model_unavailable", err };
  }

  const usage = message.usage;
  const stop = message.stop_reason as string | null;
  const costMicros = estimateCostMicros(message.model, usage);
  const inputTokens = usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
  // The specialist's model spends the run's budgets: counted with this step, and in this advance's copy at once.
  w.count({ turns: 1, inputTokens, outputTokens: usage.output_tokens, costMicros, activeMs: latencyMs });
  w.also((s) => {
    addModelCall(s, s.unique("model_call"), {
      ...record,
      model: message.model,
      stopReason: stop,
      error: null,
      latencyMs,
      inputTokens: usage.input_tokens,
      outputTokens: usage.output_tokens,
      cacheReadTokens: usage.cache_read_input_tokens ?? 0,
      cacheWriteTokens: usage.cache_creation_input_tokens ?? 0,
      costMicros,
      response: { id: message.id, content: message.content, stop_reason: stop, usage },
    });
    addShopSpend(s, s.unique("shop_spend"), ref.tenantId, costMicros);
  });
  Object.assign(state.counters, {
    turnsUsed: state.counters.turnsUsed + 1,
    inputTokens: state.counters.inputTokens + inputTokens,
    outputTokens: state.counters.outputTokens + usage.output_tokens,
    costMicros: state.counters.costMicros + costMicros,
    activeMs: state.counters.activeMs + latencyMs,
  });
  state.spend.conversation += costMicros;
  state.spend.shopDay += costMicros;

  // Kept without blank text blocks: the provider would refuse the specialist's next request with one in it.
  const content = withoutBlankText(message.content as ContentBlock[]);
  const uses = message.content.filter((c): c is Anthropic.ToolUseBlock => c.type === "tool_use");
  const text = message.content
    .filter((c): c is Anthropic.TextBlock => c.type === "text")
    .map((c) => c.text)
    .join("\n")
    .trim();
  switch (stop) {
    case "end_turn":
      if (uses.length) return { kind: "failed", why: "its reply left a tool call unanswered." };
      if (!text) return { kind: "failed", why: "it reported nothing." };
      sp.turn.messages.push({ role: "assistant", content });
      return { kind: "report", text };
    case "tool_use": {
      if (!uses.length) return { kind: "failed", why: "it stopped for a tool call without one." };
      const unusable = unusableToolUseIds(uses, toolUseIdsIn(sp.turn.messages));
      if (unusable) return { kind: "failed", why: `its reply could not be used (${unusable}).` };
      sp.turn.messages.push({ role: "assistant", content });
      return recordCalls(sp, w, uses);
    }
    case "pause_turn":
      // A call of ours in it would never be answered (pause_turn is for the provider's own tools).
      if (uses.length) return { kind: "failed", why: "it paused its turn with a tool call in it." };
      // Sent back as it is: the model continues from it (its turns are capped).
      if (content.length) sp.turn.messages.push({ role: "assistant", content });
      sp.turn.messages.push({ role: "user", content: [{ type: "text", text: "Continue." }] });
      return { kind: "continue" };
    case "max_tokens":
      return { kind: "failed", why: "its reply was cut off (max_tokens)." };
    case "refusal":
      return { kind: "failed", why: "it declined to continue (refusal)." };
    default:
      return { kind: "failed", why: `it stopped for an unexpected reason (${String(stop)}).` };
  }
}

/** The specialist's call before the message it just wrote (the last tool_use of an earlier reply of its turn). */
function previousCallOfTurn(messages: readonly Anthropic.MessageParam[]): { name: string; input: unknown } | null {
  for (let i = messages.length - 2; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    const uses = m.content.filter((b): b is Anthropic.ToolUseBlockParam => b.type === "tool_use");
    const last = uses[uses.length - 1];
    if (last) return { name: last.name, input: last.input };
  }
  return null;
}

/**
 * The calls the specialist just proposed: gated (a tool outside its own set is refused), recorded under its scope with
 * namespaced ids, and — like the run's own turn — the read-only ones run before recording when nothing else must run
 * first. What follows is the tool phase.
 */
async function recordCalls(sp: Scope, w: StepWrite, uses: Anthropic.ToolUseBlock[]): Promise<Step> {
  const { deps, state, specialist, scope } = sp;
  const db = storeOf(deps.db);
  const namespaced = uses.map((u) => ({ ...u, id: namespacedId(scope, u.id) }));
  const { verification, gated } = await gateCalls(db, {
    run: state.ref,
    policy: state.policy,
    rows: [],
    messageSeq: Number.POSITIVE_INFINITY,
    uses: namespaced,
    known: [],
    gates: deps.gates,
    unsaved: sp.unsaved,
    // Its own previous call, from its turn: a repeat is refused as the agent's is (identical_call).
    previousCall: previousCallOfTurn(sp.turn.messages),
  });
  for (const g of gated) {
    if (specialist.tools.includes(g.name)) continue;
    // Not one of its tools: refused whatever the gates said (the shop's allowlist alone is not enough).
    Object.assign(g, {
      status: "DENIED",
      decision: "deny",
      reason: `specialist_tools: ${g.name} is not a tool of the ${specialist.title.toLowerCase()}`,
      isError: true,
      handoff: null,
      idempotencyKey: null,
      nextAttemptAt: null,
      result: {
        error_category: "permission",
        is_retryable: false,
        message: `${g.name} is not one of your tools. Use only: ${specialist.tools.join(", ")}.`,
      },
      records: [...g.records, { gate: "specialist_tools", decision: "deny", reason: `${g.name} is not a tool of this specialist` }],
    });
  }
  sp.unsaved.push(...unsavedMoneyOf(gated, scope));
  let calls: PhaseCall[] = gated.map((g) => {
    const row = gatedRow(state, g, sp.call.messageSeq, scope);
    // The handoff says which specialist asked (and inside which).
    return { ...row, recordedNow: true, toPark: row.toPark && { ...row.toPark, specialist: sp.path.join(" → ") } };
  });
  for (const g of gated) {
    if (!escalates(g)) continue;
    // Above the policy ceiling: refused, and a person is asked to look (the refusal says so).
    await openCeilingEscalation(db, w, g, { specialist: { path: sp.path.join(" → "), title: specialist.title } });
    calls = calls.map((c) => (c.id === g.id ? { ...c, result: g.result } : c));
  }

  const runnable = runnableCalls(calls);
  const mustRecordFirst = runnable.some((c) => !runsBeforeRecording(c.name));
  let followUps: Awaited<ReturnType<typeof runCalls>>["followUps"] = [];
  if (!mustRecordFirst && runnable.length) {
    // Only reads to run: they run now and are recorded with their outcome.
    const ran = await runCalls(deps, state, calls, runnable, { runSpecialist, verification, specialists: sp.path, unsaved: sp.unsaved });
    calls = ran.calls.map((c) => ({ ...c, unwritten: undefined }));
    followUps = ran.followUps;
    w.count({ activeMs: ran.activeMs });
  }
  const byId = new Map(calls.map((c) => [c.id, c]));
  w.also((s) =>
    addToolCalls(
      s,
      s.unique("calls"),
      state.ref,
      gated.map((g) => {
        const c = byId.get(g.id)!;
        return { ...g, status: c.status, result: c.result, isError: c.isError, attempts: c.attempts, nextAttemptAt: c.nextAttemptAt };
      }),
      sp.call.messageSeq,
      state.policy.version,
      { scope },
    ),
  );
  if (mustRecordFirst) {
    // Calls with effects run once they are recorded (their outcome is written with their effect); a call a person
    // must decide gets its approval in the same statement (a parked call never exists without its handoff).
    await openApprovals(
      deps,
      w,
      calls.flatMap((c) => (c.toPark ? [c.toPark] : [])),
    );
    return { kind: "continue" };
  }
  return concludePhase(sp, w, uses, calls, followUps);
}

/**
 * The specialist's tool phase, continued from its stored turn (after a decision, a retry, a crash, or right after
 * its calls were recorded): only what the turn still awaits is acted on — deferred calls that are due are gated
 * again, approved calls run; settled calls keep their outcome and parked ones keep waiting.
 */
async function toolPhaseOf(sp: Scope, w: StepWrite, last: AgentTurnMessage, verification: Verification): Promise<Step> {
  const { deps, state, scope } = sp;
  const db = storeOf(deps.db);
  const uses = last.content.filter((b): b is Anthropic.ToolUseBlockParam => b.type === "tool_use");
  if (!uses.length) {
    // The turn had ended with its report (saved, but the outer result was not): report it again.
    const text = last.content
      .flatMap((b) => (b.type === "text" ? [b.text] : []))
      .join("\n")
      .trim();
    return text ? { kind: "report", text } : { kind: "failed", why: "it reported nothing." };
  }
  const recorded = await callsOfScope(db, state.ref.id, scope);
  let calls: PhaseCall[] = uses.map((u) => {
    const row = recorded.find((c) => c.toolUseId === namespacedId(scope, u.id));
    if (!row) throw new AgentTurnUnreadableError(scope, `its call ${u.id} was never recorded`);
    return { ...row };
  });
  const now = Date.now();
  const due = calls.filter((c) => c.status === "DEFERRED" && (!c.nextAttemptAt || c.nextAttemptAt.getTime() <= now));
  if (due.length) {
    const regated = await gateCalls(db, {
      run: state.ref,
      policy: state.policy,
      rows: [],
      messageSeq: Number.POSITIVE_INFINITY,
      uses: due.map((d) => ({ type: "tool_use" as const, id: d.toolUseId, name: d.name, input: termsToRegate(d) })),
      known: [],
      gates: deps.gates,
      prior: new Map(due.map((d) => [d.toolUseId, { id: d.id, attempts: d.attempts }])),
    });
    verification = regated.verification;
    for (const g of regated.gated) {
      const old = due.find((d) => d.toolUseId === g.toolUseId)!;
      if (old.decidedById && (g.decision === "ask" || g.decision === "allow")) {
        // A person approved it and its limits allow it again: their approval stands (as in ./tool-phase).
        calls = calls.map((c) => (c.id === old.id ? { ...c, status: "APPROVED", nextAttemptAt: null } : c));
        w.also((s) => approvalStands(s, old.id));
        continue;
      }
      const specialist = { path: sp.path.join(" → "), title: sp.specialist.title };
      if (escalates(g)) await openCeilingEscalation(db, w, g, { specialist, approved: !!old.decidedById });
      calls = calls.map((c) => {
        if (c.id !== old.id) return c;
        const row = gatedRow(state, g, c.messageSeq, scope);
        return {
          ...row,
          input: c.input,
          position: c.position,
          toPark: row.toPark && { ...row.toPark, specialist: sp.path.join(" → ") },
        };
      });
      w.also((s) => regateCall(s, state, old.id, g));
    }
  }
  let followUps: Awaited<ReturnType<typeof runCalls>>["followUps"] = [];
  const runnable = runnableCalls(calls);
  if (runnable.length) {
    const ran = await runCalls(deps, state, calls, runnable, { runSpecialist, verification, specialists: sp.path, unsaved: sp.unsaved });
    calls = ran.calls;
    followUps = ran.followUps;
    w.count({ activeMs: ran.activeMs });
    failpoint("after-specialist-calls", sp.specialist.tool);
  }
  return concludePhase(sp, w, uses, calls, followUps);
}

/** Where the specialist's tool phase stands: waiting (for a person or a retry), or its results appended to its turn. */
async function concludePhase(
  sp: Scope,
  w: StepWrite,
  uses: Array<{ id: string }>,
  phaseCalls: PhaseCall[],
  followUps: Awaited<ReturnType<typeof runCalls>>["followUps"],
): Promise<Step> {
  const { calls, toPark, parked, retryAt } = await settlePhase(storeOf(sp.deps.db), w, phaseCalls, followUps);
  if (parked) return { kind: "waits", waitsFor: { toPark } };
  if (retryAt) return { kind: "waits", waitsFor: { retryAt } };
  // Every call answered: ONE user message of results, in the order of the tool_use blocks, under the specialist's ids.
  sp.turn.messages.push({
    role: "user",
    content: uses.map((u) => {
      const c = calls.find((x) => x.toolUseId === namespacedId(sp.scope, u.id))!;
      return {
        type: "tool_result" as const,
        tool_use_id: u.id,
        content: toolResultText(c.result),
        ...(c.isError ? { is_error: true } : {}),
      };
    }),
  });
  return { kind: "continue" };
}

/** The outer result when the specialist's stored turn cannot be read back (never a fresh start, never "done"). */
function unreadable(
  state: RunState,
  call: RunnableCall,
  specialist: Specialist,
  err: Error,
  inner: ToolCallRow[],
): [Execution["settled"], Partial<Execution>] {
  log.error({ err, runId: state.ref.id, toolUseId: call.toolUseId }, "a specialist's stored turn could not be read back");
  const approved = inner.filter((c) => c.status === "APPROVED");
  const notRun = approved.length
    ? `The approved action${approved.length > 1 ? "s" : ""} (${approved.map(describeCall).join("; ")}) did NOT run. `
    : "";
  const failure: ToolErrorBody = {
    error_category: "system",
    is_retryable: false,
    message: `The ${specialist.title.toLowerCase()}'s work could not be loaded. ${notRun}${actionsInWords(inner)} Do not tell the customer anything else was done; a person will follow up.`,
    specialist: specialist.title,
    actions: actionsOf(inner),
  };
  return [
    { status: "FAILED", result: failure, isError: true, attempts: call.attempts + 1, nextAttemptAt: null },
    {
      escalation: {
        trigger: "no_progress",
        reason: `The ${specialist.title.toLowerCase()}'s stored turn could not be read back${approved.length ? "; an approved action did not run" : ""}.`,
        rootCause: err.message,
        recommendedAction: approved.length
          ? `The approval is kept on the call (${approved.map(describeCall).join("; ")}): carry it out by hand if it still applies, and tell the customer.`
          : "Read the case and finish the customer's request.",
      },
    },
  ];
}

function describeCall(c: Pick<ToolCallRow, "name" | "input" | "effectiveInput">): string {
  const i = (c.effectiveInput ?? c.input ?? {}) as Record<string, unknown>;
  const order = typeof i.order_number === "string" ? ` on ${i.order_number}` : "";
  const amount = typeof i.amount_cents === "number" ? ` of ${formatCents(i.amount_cents)}` : "";
  return `${c.name}${amount}${order}`;
}

/** What the specialist's calls came to, by code (never the specialist's own words): for the outer result. */
function actionsOf(calls: ToolCallRow[]) {
  return calls
    .filter((c) => getTool(c.name)?.sideEffect || getTool(c.name)?.agent)
    .map((c) => ({
      tool: c.name,
      input: c.effectiveInput ?? c.input,
      status: c.status.toLowerCase(),
      ...(c.review ? { review: c.review } : {}),
    }));
}

function actionsInWords(calls: ToolCallRow[]): string {
  const acted = calls.filter((c) => getTool(c.name)?.sideEffect);
  const done = acted.filter((c) => c.status === "SUCCEEDED").map(describeCall);
  return done.length ? `Done so far: ${done.join("; ")}.` : "Nothing was done.";
}
