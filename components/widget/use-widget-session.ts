"use client";

import { useEffect, useState } from "react";
import type { WidgetSession } from "@/lib/widget/api-types";
import { startConversation, WidgetApiError } from "./widget-api";
import { loadVisitor, saveVisitor, visitorKey } from "./visitor-storage";
import type { IdentityState } from "./use-parent-bridge";

export type SessionState =
  | { kind: "waiting" }
  | { kind: "ready"; session: WidgetSession; notice: string | null }
  | { kind: "failed"; message: string };

const IDENTITY_REFUSED_NOTICE =
  "We couldn't confirm your sign-in, so this chat isn't linked to your account. You can still ask us anything.";

/**
 * Starts or resumes the visitor's conversation once the parent said who they are. A stored token is
 * offered only for the same person; a refused identity falls back to an anonymous chat, and says so.
 */
export function useWidgetSession(shop: string, identity: IdentityState, attempt: number): SessionState {
  const [state, setState] = useState<SessionState>({ kind: "waiting" });

  useEffect(() => {
    if (!identity.resolved) return;
    let cancelled = false;
    setState({ kind: "waiting" });

    async function start(id: string | null, notice: string | null): Promise<void> {
      const who = visitorKey(id);
      const stored = loadVisitor(shop);
      try {
        const session = await startConversation(shop, { token: stored?.who === who ? stored.token : null, identity: id });
        if (cancelled) return;
        saveVisitor(shop, { who, token: session.token });
        setState({ kind: "ready", session, notice });
      } catch (err) {
        if (cancelled) return;
        if (id && err instanceof WidgetApiError && err.status === 401) return start(null, IDENTITY_REFUSED_NOTICE);
        setState({ kind: "failed", message: err instanceof WidgetApiError ? err.message : "The chat could not start. Please try again." });
      }
    }
    void start(identity.identity, null);
    return () => {
      cancelled = true;
    };
  }, [shop, identity.resolved, identity.identity, identity.revision, attempt]);

  return state;
}
