import { getHandoffEndpoint } from "@/lib/api/endpoints/handoffs";
import { serveEndpoint } from "@/lib/api/serve";

export const dynamic = "force-dynamic";
export const GET = serveEndpoint(getHandoffEndpoint);
