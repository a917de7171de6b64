import type { Metadata } from "next";
import { headers } from "next/headers";
import Link from "next/link";
import type { ReactNode } from "react";
import { apiDocument } from "@/lib/api/endpoints";
import { curlExample, type FieldRow, fieldRows, operationsOf, typeInWords } from "@/lib/api/reference";

export const metadata: Metadata = { title: "JSON API reference · Support agent" };
export const dynamic = "force-dynamic";

/** The JSON API's reference, rendered on the server from the OpenAPI document the API serves. */
export default async function ApiReferencePage() {
  const doc = apiDocument();
  const h = await headers();
  const origin = `${h.get("x-forwarded-proto") ?? "http"}://${h.get("x-forwarded-host") ?? h.get("host") ?? "localhost:3000"}`;
  const operations = operationsOf(doc);
  return (
    <main className="mx-auto max-w-5xl space-y-10 px-4 py-8">
      <header className="space-y-2">
        <h1 className="text-2xl font-semibold">{doc.info.title}</h1>
        <p className="text-sm text-slate-700">{doc.info.description}</p>
        <p className="text-sm">
          Machine-readable:{" "}
          <a href="/api/v1/openapi.json" className="font-medium text-blue-700 underline">
            /api/v1/openapi.json
          </a>{" "}
          (OpenAPI {doc.openapi}, generated from the same schemas that validate requests).
        </p>
        <nav aria-label="Endpoints">
          <ul className="mt-3 grid gap-1 text-sm sm:grid-cols-2">
            {operations.map(({ path, method, op, anchor }) => (
              <li key={anchor}>
                <a href={`#${anchor}`} className="text-blue-700 underline">
                  <Method method={method} /> /api/v1{path}
                </a>{" "}
                <span className="text-slate-600">— {op.summary}</span>
              </li>
            ))}
          </ul>
        </nav>
      </header>

      <section aria-labelledby="auth" className="space-y-3">
        <h2 id="auth" className="text-xl font-semibold">
          Authentication and limits
        </h2>
        <p className="text-sm">
          Send <code>Authorization: Bearer sa_live_…</code> with every request (except the document itself). A token belongs to one
          shop: another shop&apos;s ids are answered <code>404 NOT_FOUND</code>. Admins create tokens in the console (
          <Link href="/console/settings/api-tokens" className="text-blue-700 underline">
            Settings → API tokens
          </Link>
          ) or the operator runs <code>npm run --silent agent -- token create --tenant &lt;shop&gt; --name &lt;name&gt;</code>; the token is
          shown once. Requests are counted per token; past the limit the answer is <code>429 RATE_LIMITED</code> with{" "}
          <code>Retry-After</code>, and every answer carries <code>RateLimit-Limit</code>, <code>RateLimit-Remaining</code> and{" "}
          <code>RateLimit-Reset</code>.
        </p>
        <Table head={["scope", "allows"]}>
          {doc["x-scopes"].map((s) => (
            <tr key={s.scope}>
              <Td>
                <code>{s.scope}</code>
              </Td>
              <Td>{s.description}</Td>
            </tr>
          ))}
        </Table>
      </section>

      <section aria-labelledby="errors" className="space-y-3">
        <h2 id="errors" className="text-xl font-semibold">
          Errors
        </h2>
        <p className="text-sm">
          Every refusal is JSON: <code>{'{ "error": { "code": "STALE_VERSION", "message": "…", "details": { … } } }'}</code>. The code is
          stable (the console and the CLI use the same ones); the message is written for people.
        </p>
        <Table head={["code", "status", "meaning"]}>
          {doc["x-error-codes"].map((e) => (
            <tr key={e.code} id={`error-${e.code}`}>
              <Td>
                <code>{e.code}</code>
              </Td>
              <Td>{e.status}</Td>
              <Td>{e.meaning}</Td>
            </tr>
          ))}
        </Table>
      </section>

      <section aria-labelledby="endpoints" className="space-y-8">
        <h2 id="endpoints" className="text-xl font-semibold">
          Endpoints
        </h2>
        {operations.map(({ path, method, op, anchor }) => {
          const body = op.requestBody?.content["application/json"].schema;
          const response = op.responses["200"]?.content?.["application/json"]?.schema;
          return (
            <article key={anchor} id={anchor} aria-labelledby={`${anchor}-title`} className="space-y-3 rounded-lg border border-slate-200 bg-white p-4 shadow-sm">
              <h3 id={`${anchor}-title`} className="font-mono text-lg font-semibold">
                <Method method={method} /> /api/v1{path}
              </h3>
              <p className="font-medium">{op.summary}</p>
              <p className="text-sm text-slate-700">{op.description}</p>
              <p className="text-sm">
                {op["x-required-scope"] ? (
                  <>
                    Scope: <code>{op["x-required-scope"]}</code>
                  </>
                ) : (
                  "Public: no token needed."
                )}
              </p>
              {op.parameters.length ? (
                <>
                  <h4 className="text-sm font-semibold">Parameters</h4>
                  <Table head={["name", "in", "type", "required", "description"]}>
                    {op.parameters.map((p) => (
                      <tr key={`${p.in}-${p.name}`}>
                        <Td>
                          <code>{p.name}</code>
                        </Td>
                        <Td>{p.in}</Td>
                        <Td>{typeInWords(p.schema).type}</Td>
                        <Td>{p.required ? "yes" : "no"}</Td>
                        <Td>{p.description ?? ""}</Td>
                      </tr>
                    ))}
                  </Table>
                </>
              ) : null}
              {body ? (
                <>
                  <h4 className="text-sm font-semibold">
                    Body (JSON): <SchemaLink schema={body} />
                  </h4>
                  <Fields rows={fieldRows(resolve(doc, body))} />
                </>
              ) : null}
              {response ? (
                <p className="text-sm">
                  <span className="font-semibold">200 response:</span> <SchemaLink schema={response} />
                </p>
              ) : null}
              <p className="text-sm">
                <span className="font-semibold">Refusals:</span>{" "}
                {op["x-error-codes"].map((c, i) => (
                  <span key={c}>
                    {i ? ", " : ""}
                    <a href={`#error-${c}`} className="underline">
                      <code>{c}</code>
                    </a>
                  </span>
                ))}
              </p>
              <h4 className="text-sm font-semibold">Example</h4>
              <pre className="overflow-x-auto rounded bg-slate-900 p-3 text-xs text-slate-100" data-testid={`curl-${anchor}`}>
                {curlExample(origin, path, method, op)}
              </pre>
            </article>
          );
        })}
      </section>

      <section aria-labelledby="schemas" className="space-y-6">
        <h2 id="schemas" className="text-xl font-semibold">
          Schemas
        </h2>
        {Object.entries(doc.components.schemas).map(([name, schema]) => (
          <article key={name} id={`schema-${name}`} aria-labelledby={`schema-${name}-title`} className="space-y-2">
            <h3 id={`schema-${name}-title`} className="font-mono text-lg font-semibold">
              {name}
            </h3>
            {typeof schema.description === "string" ? <p className="text-sm text-slate-700">{schema.description}</p> : null}
            <Fields rows={fieldRows(schema)} />
          </article>
        ))}
      </section>
    </main>
  );
}

function resolve(doc: ReturnType<typeof apiDocument>, schema: Record<string, unknown>): Record<string, unknown> {
  return typeof schema.$ref === "string" ? (doc.components.schemas[schema.$ref.split("/").pop()!] ?? {}) : schema;
}

function SchemaLink({ schema }: { schema: Record<string, unknown> }) {
  if (typeof schema.$ref !== "string") return <span>JSON object</span>;
  const name = schema.$ref.split("/").pop()!;
  return (
    <a href={`#schema-${name}`} className="font-mono text-blue-700 underline">
      {name}
    </a>
  );
}

function Method({ method }: { method: string }) {
  return <span className={method === "get" ? "font-semibold text-emerald-800" : "font-semibold text-blue-800"}>{method.toUpperCase()}</span>;
}

function Fields({ rows }: { rows: FieldRow[] }) {
  return (
    <Table head={["field", "type", "always there", "description"]}>
      {rows.map((r) => (
        <tr key={r.name}>
          <Td>
            <code>{r.name}</code>
          </Td>
          <Td>
            {r.ref ? (
              <a href={`#schema-${r.ref}`} className="text-blue-700 underline">
                {r.type}
              </a>
            ) : (
              r.type
            )}
          </Td>
          <Td>{r.required ? "yes" : "no"}</Td>
          <Td>{r.description ?? ""}</Td>
        </tr>
      ))}
    </Table>
  );
}

function Table({ head, children }: { head: string[]; children: ReactNode }) {
  return (
    <div className="overflow-x-auto">
      <table className="w-full text-left text-sm">
        <thead className="text-xs uppercase text-slate-600">
          <tr>
            {head.map((h) => (
              <th key={h} className="py-1.5 pr-3 font-medium">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100 align-top">{children}</tbody>
      </table>
    </div>
  );
}

function Td({ children }: { children: ReactNode }) {
  return <td className="py-1.5 pr-3">{children}</td>;
}
