// Calls the JSON API's route handlers as Next.js would: a Request, and the route's params. The endpoint is found
// by its OpenAPI path, so a test exercises the same handler app/api/v1 mounts, on the test's database and runtime.
import { API_ENDPOINTS } from "@/lib/api/endpoints";
import { type ApiDeps, createApiHandler } from "@/lib/api/handler";

export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: any;
}

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  /** sent as is (with the JSON content type unless `contentType` says otherwise) */
  rawBody?: string;
  contentType?: string | null;
  headers?: Record<string, string>;
  /** sent as a stream with no declared length (chunked) */
  stream?: ReadableStream<Uint8Array>;
}

export function apiClient(deps: ApiDeps) {
  return async function call(method: "GET" | "POST", pathAndQuery: string, opts: CallOptions = {}): Promise<ApiAnswer> {
    const url = new URL(`http://localhost/api/v1${pathAndQuery}`);
    const path = url.pathname.slice("/api/v1".length);
    for (const endpoint of API_ENDPOINTS) {
      const params = matchPath(endpoint.path, path);
      if (!params || endpoint.method !== method) continue;
      const headers = new Headers(opts.headers);
      if (opts.token) headers.set("authorization", `Bearer ${opts.token}`);
      const body = opts.stream ?? opts.rawBody ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined);
      if (body !== undefined && opts.contentType !== null) headers.set("content-type", opts.contentType ?? "application/json");
      const init = { method, headers, body, ...(opts.stream ? { duplex: "half" } : {}) } as RequestInit;
      const res = await createApiHandler(endpoint, deps)(new Request(url, init), {
        params: Promise.resolve(params),
      });
      return { status: res.status, headers: res.headers, body: await res.json() };
    }
    throw new Error(`no endpoint for ${method} ${path}`);
  };
}

/** A client of the API on a test harness's database and runtime, with a rate limit no test reaches. */
export function harnessApiClient(h: { db: unknown; deps: unknown }) {
  return apiClient({
    getDb: async () => h.db as Awaited<ReturnType<ApiDeps["getDb"]>>,
    getRuntime: async () => h.deps as Awaited<ReturnType<ApiDeps["getRuntime"]>>,
    rateLimit: () => ({ points: 10_000, windowSeconds: 60 }),
  });
}

/** `/handoffs/{id}` against `/handoffs/abc` → { id: "abc" }; null when the path does not match. */
export function matchPath(template: string, path: string): Record<string, string> | null {
  const names: string[] = [];
  const pattern = template.replace(/[.]/g, "\\.").replace(/\{(\w+)\}/g, (_m, name: string) => {
    names.push(name);
    return "([^/]+)";
  });
  const m = new RegExp(`^${pattern}$`).exec(path);
  if (!m) return null;
  return Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));
}
