import { Badge } from "@/components/ui/badge";
import { JsonView } from "./json-view";

export type Block = { type: string; [k: string]: unknown };

/** One content block as the model saw it: text, a tool_use with its input, a tool_result with its body. */
export function ContentBlock({ block }: { block: Block }) {
  if (block.type === "text") return <p className="whitespace-pre-wrap break-words text-sm">{String(block.text ?? "")}</p>;
  if (block.type === "tool_use") {
    return (
      <div className="space-y-1">
        <p className="text-xs">
          <Badge tone="violet">tool_use</Badge> <code className="font-mono">{String(block.name)}</code>{" "}
          <span className="font-mono text-slate-500">{String(block.id)}</span>
        </p>
        <JsonView value={block.input} label={`Input of ${String(block.name)}`} />
      </div>
    );
  }
  if (block.type === "tool_result") {
    const content = block.content;
    return (
      <div className="space-y-1">
        <p className="text-xs">
          <Badge tone={block.is_error ? "red" : "green"}>tool_result{block.is_error ? " · is_error" : ""}</Badge>{" "}
          <span className="font-mono text-slate-500">for {String(block.tool_use_id)}</span>
        </p>
        {typeof content === "string" ? (
          <pre className="overflow-x-auto whitespace-pre-wrap break-words rounded bg-slate-100 p-2 text-xs">{content}</pre>
        ) : (
          <JsonView value={content} label="Tool result content" />
        )}
      </div>
    );
  }
  return <JsonView value={block} label={`${block.type} block`} />;
}
