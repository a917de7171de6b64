"use client";
import { signOut } from "next-auth/react";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { Button } from "@/components/ui/button";

/** Signs out without next-auth's redirect (which trusts NEXTAUTH_URL's host), then goes to sign-in. */
export function SignOutButton() {
  const router = useRouter();
  const [pending, setPending] = useState(false);
  return (
    <Button
      size="sm"
      variant="ghost"
      disabled={pending}
      onClick={async () => {
        setPending(true);
        try {
          await signOut({ redirect: false });
        } finally {
          router.replace("/login");
          router.refresh();
        }
      }}
    >
      {pending ? "Signing out…" : "Sign out"}
    </Button>
  );
}
