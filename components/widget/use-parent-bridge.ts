"use client";

import { useCallback, useEffect, useRef, useState } from "react";
import { BRIDGE_SOURCE, parseParentMessage, type WidgetMessageToParent } from "@/lib/widget/bridge-protocol";

/**
 * The iframe's side of the postMessage bridge. It listens only to its parent window at the one origin it
 * was given at load (validated by the server against the shop's allowed origins) and posts only to that
 * origin. The shop's identity token arrives here — never in the URL.
 *
 * mode: "standalone" (opened directly, no parent), "embedded" (framed by an allowed parent), or "refused"
 * (framed, but the parent is not allowed or unknown: the widget then does not run at all).
 */
export type BridgeMode = "pending" | "standalone" | "embedded" | "refused";

export interface IdentityState {
  /** false until the parent said who the visitor is (or a short wait passed). */
  resolved: boolean;
  identity: string | null;
  /** Bumped on every identify, so the same token sent again still restarts deliberately. */
  revision: number;
}

// If the parent never says hello (its script failed), start anonymously rather than hang.
const INIT_WAIT_MS = 3000;

export function useParentBridge(parentOrigin: string | null, parentRefused: boolean) {
  const [mode, setMode] = useState<BridgeMode>("pending");
  const [identity, setIdentity] = useState<IdentityState>({ resolved: false, identity: null, revision: 0 });
  const [open, setOpen] = useState(true);
  // Bumped when the visitor opened the chat, so the input takes focus (never on a silent reopen).
  const [focusSignal, setFocusSignal] = useState(0);
  const modeRef = useRef<BridgeMode>("pending");

  const post = useCallback(
    (message: WidgetMessageToParent) => {
      if (modeRef.current !== "embedded" || !parentOrigin) return;
      window.parent.postMessage(message, parentOrigin); // exact target origin, never "*"
    },
    [parentOrigin],
  );

  useEffect(() => {
    const framed = window.parent !== window;
    const next: BridgeMode = parentRefused ? "refused" : !framed ? "standalone" : parentOrigin ? "embedded" : "refused";
    modeRef.current = next;
    setMode(next);
    if (next === "standalone") setIdentity({ resolved: true, identity: null, revision: 1 });
    if (next !== "embedded" || !parentOrigin) return;

    const onMessage = (event: MessageEvent) => {
      if (event.source !== window.parent || event.origin !== parentOrigin) return; // not our shop page: ignore
      const msg = parseParentMessage(event.data);
      if (!msg) return;
      if (msg.type === "init") {
        setOpen(msg.open);
        if (msg.focus) setFocusSignal((n) => n + 1);
        setIdentity((s) => ({ resolved: true, identity: msg.identity, revision: s.revision + 1 }));
      } else if (msg.type === "identify") {
        setIdentity((s) => ({ resolved: true, identity: msg.identity, revision: s.revision + 1 }));
      } else if (msg.type === "visibility") {
        setOpen(msg.open);
        if (msg.focus) setFocusSignal((n) => n + 1);
      }
    };
    window.addEventListener("message", onMessage);
    window.parent.postMessage({ source: BRIDGE_SOURCE, type: "ready" } satisfies WidgetMessageToParent, parentOrigin);
    const fallback = window.setTimeout(() => {
      setIdentity((s) => (s.resolved ? s : { resolved: true, identity: null, revision: s.revision + 1 }));
    }, INIT_WAIT_MS);
    return () => {
      window.removeEventListener("message", onMessage);
      window.clearTimeout(fallback);
    };
  }, [parentOrigin, parentRefused]);

  const close = useCallback(() => post({ source: BRIDGE_SOURCE, type: "close" }), [post]);
  const reportUnread = useCallback((count: number) => post({ source: BRIDGE_SOURCE, type: "unread", count }), [post]);

  return { mode, identity, open, focusSignal, close, reportUnread };
}
