// Every endpoint of /api/v1, in the order the document and the reference page list them. A route file under
// app/api/v1 serves one of these (test/api/openapi.test.ts checks that files and document agree).
import type { ApiEndpoint } from "../endpoint";
import { defineEndpoint } from "../endpoint";
import { buildOpenApiDocument, type OpenApiDocument } from "../openapi";
import { openApiDocumentSchema } from "../schemas";
import { getRunEndpoint } from "./runs";
import { decideHandoffEndpoint, getHandoffEndpoint, listHandoffsEndpoint } from "./handoffs";
import { listConversationsEndpoint } from "./conversations";

let document: OpenApiDocument | undefined;

/** The OpenAPI document of every endpoint, built once per process. */
export function apiDocument(): OpenApiDocument {
  document ??= buildOpenApiDocument(API_ENDPOINTS);
  return document;
}

export const openApiEndpoint = defineEndpoint(
  {
    operationId: "getOpenApiDocument",
    method: "GET",
    path: "/openapi.json",
    summary: "This API's OpenAPI document",
    description:
      "The OpenAPI 3.1 document of /api/v1, generated from the same zod schemas that validate requests and shape responses. Public: no token.",
    scope: null,
    response: openApiDocumentSchema,
    errors: [],
  },
  async () => apiDocument() as unknown as Record<string, unknown>,
);

export const API_ENDPOINTS: readonly ApiEndpoint[] = [
  listHandoffsEndpoint,
  getHandoffEndpoint,
  decideHandoffEndpoint,
  getRunEndpoint,
  listConversationsEndpoint,
  openApiEndpoint,
] as unknown as readonly ApiEndpoint[];
