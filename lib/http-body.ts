import { AppError } from "@/lib/errors";
import { isWellFormed } from "@/lib/storable-text";

/**
 * Request bodies read with a byte counter, for every route handler that takes JSON (the widget, /api/v1, the console).
 * A declared Content-Length over the limit is refused before reading; a body sent without one (chunked) is read only
 * up to the limit and then abandoned — the stream is cancelled, so an endless upload never sits in memory. Text that
 * cannot be stored (invalid UTF-8, or a lone UTF-16 surrogate smuggled in as a `\ud800` escape, which PostgreSQL's
 * jsonb refuses) is a 400, never a failure further down.
 */

export const MAX_JSON_BODY_BYTES = 32 * 1024;

/** The body as text, at most `maxBytes` of it: past that, AppError TOO_LARGE (413) and the rest is never read. */
export async function readBodyText(req: Request, maxBytes = MAX_JSON_BODY_BYTES): Promise<string> {
  const tooLarge = () => new AppError("TOO_LARGE", `The request is too large (at most ${Math.floor(maxBytes / 1024)} kB).`);
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw tooLarge();
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      // Stop the upload where it is: the rest is neither read nor buffered.
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new AppError("INVALID_INPUT", "The request body is not valid UTF-8 text.");
  }
}

const LONE_SURROGATE_MESSAGE = "The text contains an invalid character (an unpaired surrogate); send valid Unicode text.";

/** JSON.parse, refusing any key or string with a lone surrogate (400 INVALID_INPUT). */
export function parseJsonText(text: string): unknown {
  let lone = false;
  let data: unknown;
  try {
    data = JSON.parse(text, (key, value) => {
      if (!isWellFormed(key) || (typeof value === "string" && !isWellFormed(value))) lone = true;
      return value;
    });
  } catch {
    throw new AppError("INVALID_INPUT", "The request body is not valid JSON.");
  }
  if (lone) throw new AppError("INVALID_INPUT", LONE_SURROGATE_MESSAGE);
  return data;
}

/** Reads a bounded body and parses it as JSON (see readBodyText and parseJsonText). */
export async function readJsonText(req: Request, maxBytes = MAX_JSON_BODY_BYTES): Promise<unknown> {
  return parseJsonText(await readBodyText(req, maxBytes));
}

export { isWellFormed };
