import type { WidgetErrorBody, WidgetHumanResponse, WidgetSendResponse, WidgetSession, WidgetViewResponse } from "@/lib/widget/api-types";

/** The iframe's calls to the widget API (same origin). Errors carry the API's plain-words message. */

export class WidgetApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "WidgetApiError";
  }
}

const OFFLINE_MESSAGE = "We couldn't reach the chat service. Check your connection and try again.";

async function call<T>(url: string, init: RequestInit & { token?: string | null }): Promise<T> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set("authorization", `Bearer ${init.token}`);
  if (init.body !== undefined) headers.set("content-type", "application/json");
  let res: Response;
  try {
    res = await fetch(url, { ...init, headers, cache: "no-store", credentials: "same-origin" });
  } catch (err) {
    if ((err as Error)?.name === "AbortError") throw err;
    throw new WidgetApiError(0, "NETWORK", OFFLINE_MESSAGE);
  }
  const body = (await res.json().catch(() => null)) as (T & Partial<WidgetErrorBody>) | null;
  if (!res.ok || !body) {
    throw new WidgetApiError(res.status, body?.code ?? "INTERNAL", body?.message ?? "Something went wrong on our side. Please try again.");
  }
  return body;
}

const base = (shop: string) => `/api/widget/${encodeURIComponent(shop)}`;

export function startConversation(shop: string, a: { token: string | null; identity: string | null }) {
  return call<WidgetSession>(`${base(shop)}/conversation`, {
    method: "POST",
    token: a.token,
    body: JSON.stringify({ identity: a.identity }),
  });
}

export function fetchView(shop: string, token: string, afterSeq: number, signal?: AbortSignal) {
  return call<WidgetViewResponse>(`${base(shop)}/conversation?after=${afterSeq}`, { method: "GET", token, signal });
}

export function sendMessage(shop: string, token: string, text: string) {
  return call<WidgetSendResponse>(`${base(shop)}/messages`, { method: "POST", token, body: JSON.stringify({ text }) });
}

export function askForPerson(shop: string, token: string) {
  return call<WidgetHumanResponse>(`${base(shop)}/human`, { method: "POST", token, body: "{}" });
}

export function eventsUrl(shop: string) {
  return `${base(shop)}/events`;
}
