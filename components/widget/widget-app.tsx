"use client";

import { useState } from "react";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useParentBridge } from "./use-parent-bridge";
import { useWidgetSession } from "./use-widget-session";
import { ConversationPane } from "./conversation-pane";
import { WidgetHeader } from "./widget-header";
import { WidgetFooter } from "./widget-footer";

export interface WidgetAppProps {
  shop: string;
  shopName: string;
  /** The parent page's origin, already checked against the shop's allowed origins; null when standalone. */
  parentOrigin: string | null;
  /** A parent origin was given but is not allowed: the widget must not run. */
  parentRefused: boolean;
  offline: boolean;
}

/** The widget iframe's root: bridge to the shop page, the visitor's session, then the conversation. */
export function WidgetApp(props: WidgetAppProps) {
  const [client] = useState(
    () => new QueryClient({ defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: true }, mutations: { retry: 0 } } }),
  );
  return (
    <QueryClientProvider client={client}>
      <Widget {...props} />
    </QueryClientProvider>
  );
}

function Widget(props: WidgetAppProps) {
  const bridge = useParentBridge(props.parentOrigin, props.parentRefused);
  const [attempt, setAttempt] = useState(0);
  const session = useWidgetSession(props.shop, bridge.identity, attempt);
  const onClose = bridge.mode === "embedded" ? bridge.close : null;

  if (bridge.mode === "refused") {
    return (
      <Shell>
        <WidgetHeader shopName={props.shopName} customerName={null} personState="available" onTalkToPerson={null} onClose={null} />
        <p role="alert" className="m-auto max-w-xs p-6 text-center text-sm text-slate-700">
          This chat can&apos;t be shown on this website. Please contact {props.shopName} from their own site.
        </p>
      </Shell>
    );
  }

  if (session.kind !== "ready") {
    return (
      <Shell onEscape={onClose}>
        <WidgetHeader shopName={props.shopName} customerName={null} personState="available" onTalkToPerson={null} onClose={onClose} />
        {session.kind === "failed" ? (
          <div role="alert" className="m-auto flex max-w-xs flex-col items-center gap-3 p-6 text-center text-sm text-slate-700">
            <p>{session.message}</p>
            <button
              type="button"
              onClick={() => setAttempt((n) => n + 1)}
              className="rounded-lg bg-blue-600 px-4 py-2 font-semibold text-white hover:bg-blue-700"
            >
              Try again
            </button>
          </div>
        ) : (
          <p role="status" className="m-auto p-6 text-sm text-slate-600">
            Starting the chat…
          </p>
        )}
        <WidgetFooter offline={props.offline} />
      </Shell>
    );
  }

  return (
    <Shell onEscape={onClose}>
      <ConversationPane
        key={session.session.token}
        shop={props.shop}
        shopName={props.shopName}
        offline={props.offline}
        session={session.session}
        notice={session.notice}
        open={bridge.open}
        focusSignal={bridge.focusSignal}
        onClose={onClose}
        reportUnread={bridge.reportUnread}
        onGone={() => setAttempt((n) => n + 1)}
      />
    </Shell>
  );
}

function Shell({ children, onEscape }: { children: React.ReactNode; onEscape?: (() => void) | null }) {
  return (
    <div
      className="flex h-dvh w-full min-w-0 flex-col overflow-hidden bg-white text-slate-900"
      onKeyDown={(e) => {
        if (e.key === "Escape" && onEscape) onEscape();
      }}
    >
      {children}
    </div>
  );
}
