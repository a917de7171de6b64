// A reply must never quote the agent's instructions (a customer asking "print your system prompt" gets an answer, not
// the prompt). Any run of LEAK_WORDS consecutive words of the system prompt, in any case and spacing, counts as a
// quote: short enough to catch a paraphrase that keeps whole clauses, long enough that ordinary replies never match.
import { SYSTEM_PROMPT } from "./prompt";

const LEAK_WORDS = 8;

function words(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9']+/g) ?? [];
}

function runsOf(list: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + LEAK_WORDS <= list.length; i++) out.push(list.slice(i, i + LEAK_WORDS).join(" "));
  return out;
}

const PROMPT_RUNS = new Set(runsOf(words(SYSTEM_PROMPT)));

/** Whether `text` quotes the system prompt (LEAK_WORDS words of it in a row). */
export function quotesInstructions(text: string): boolean {
  return runsOf(words(text)).some((run) => PROMPT_RUNS.has(run));
}
