import { NextResponse, type NextRequest } from "next/server";
import { normalizeOrigin } from "@/lib/widget/origins";

/**
 * Defence in depth for the widget iframe: the browser itself refuses to render /widget inside any page but the
 * parent origin the embed named (the page then also checks that origin against the shop's allow-list), so a
 * foreign site cannot frame the widget by claiming to be the shop. Every other page may not be framed at all.
 */
export function proxy(request: NextRequest) {
  const response = NextResponse.next();
  if (request.nextUrl.pathname === "/widget") {
    const parent = normalizeOrigin(request.nextUrl.searchParams.get("parent"));
    response.headers.set("Content-Security-Policy", `frame-ancestors ${parent ?? "'self'"}`);
  } else {
    response.headers.set("Content-Security-Policy", "frame-ancestors 'self'");
  }
  return response;
}

export const config = {
  // Pages only: not static files, not the APIs (which answer JSON, never framed).
  matcher: ["/((?!_next/|api/|embed\\.js|favicon\\.ico).*)"],
};
