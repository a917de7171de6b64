/**
 * An incremental Server-Sent Events parser (the subset the widget API sends: id, event, data, comments,
 * retry). Used by the iframe, which reads the stream with fetch() so the conversation token can travel in a
 * header — EventSource cannot send headers and would put the credential in the URL.
 */
export interface SseEvent {
  id: string | null;
  event: string;
  data: string;
}

export class SseParser {
  private buffer = "";
  private id: string | null = null;
  private event = "";
  private data: string[] = [];

  /** Feeds a chunk of text; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    this.buffer += chunk;
    const out: SseEvent[] = [];
    let nl: number;
    while ((nl = this.buffer.search(/\r\n|\n|\r/)) !== -1) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + (this.buffer.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        if (this.data.length || this.event) out.push({ id: this.id, event: this.event || "message", data: this.data.join("\n") });
        this.event = "";
        this.data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id" && !value.includes("\0")) this.id = value;
      else if (field === "event") this.event = value;
      else if (field === "data") this.data.push(value);
    }
    return out;
  }
}
