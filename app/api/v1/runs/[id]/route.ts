import { getRunEndpoint } from "@/lib/api/endpoints/runs";
import { serveEndpoint } from "@/lib/api/serve";

export const dynamic = "force-dynamic";
export const GET = serveEndpoint(getRunEndpoint);
