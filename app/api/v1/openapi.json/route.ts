import { openApiEndpoint } from "@/lib/api/endpoints";
import { serveEndpoint } from "@/lib/api/serve";

export const dynamic = "force-dynamic";
export const GET = serveEndpoint(openApiEndpoint);
