import { listConversationsEndpoint } from "@/lib/api/endpoints/conversations";
import { serveEndpoint } from "@/lib/api/serve";

export const dynamic = "force-dynamic";
export const GET = serveEndpoint(listConversationsEndpoint);
