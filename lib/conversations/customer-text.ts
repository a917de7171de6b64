// A customer's message as content blocks for the model (see lib/agent/framing: customer text is data).
import { customerText } from "@/lib/agent/framing";
import type { ContentBlock } from "@/lib/store/transcript";

export { shopContext } from "@/lib/agent/framing";

/** A customer's message as content blocks for the model: one framed, neutralised text block. */
export function customerContent(text: string): ContentBlock[] {
  return [{ type: "text", text: customerText(text) }];
}
