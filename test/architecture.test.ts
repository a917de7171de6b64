// The layers of lib/ stay layers: no folder of lib/ reaches, through its imports, a folder that imports it back. A cycle
// between folders is where a newcomer stops being able to read the tree from the bottom up (the demo seeders in
// lib/db importing the runtime they seed with; lib/api and lib/operator using each other's helpers): when one appears
// this test names the imports that close it, and the fix is to move the shared piece below both.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(__dirname, "..");

/** lib/<folder> for a file in a folder of lib/, the file itself for lib/<file>.ts. */
function layerOf(rel: string): string {
  const parts = rel.split("/");
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : rel.replace(/\.tsx?$/, "");
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "generated" ? [] : sourceFiles(full);
    return /\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) ? [full] : [];
  });
}

/**
 * Which node imports which, with one import that does it (to name in a failure): the files under `dir`, each
 * grouped into its node by `nodeOf` (a type-only import counts too — a reader follows it all the same).
 */
function importsBetween(dir: string, nodeOf: (rel: string) => string): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const file of sourceFiles(path.join(root, dir))) {
    const rel = path.relative(root, file).split(path.sep).join("/");
    const text = fs.readFileSync(file, "utf8");
    for (const m of text.matchAll(/(?:from|import\()\s*["'](@\/lib\/[^"']+|\.{1,2}\/[^"']+)["']/g)) {
      const spec = m[1]!;
      const target = spec.startsWith("@/") ? spec.slice(2) : path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec));
      if (!target.startsWith(`${dir}/`)) continue;
      const [from, to] = [nodeOf(rel), nodeOf(target)];
      if (from === to) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${rel} → ${spec}`);
    }
  }
  return edges;
}

/** The strongly connected groups of more than one layer (Tarjan). */
function cycles(edges: Map<string, Map<string, string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) out.push(group.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe("the layers of lib/", () => {
  it("no folder of lib/ imports, directly or not, a folder that imports it", () => {
    const edges = importsBetween("lib", layerOf);
    expect(edges.size, "the walk found lib/'s imports").toBeGreaterThan(20);
    const found = cycles(edges).map((group) =>
      group.flatMap((a) => group.filter((b) => edges.get(a)?.has(b)).map((b) => edges.get(a)!.get(b)!)),
    );
    expect(found).toEqual([]);
  });

  it("no file of lib/ imports, directly or not, a file that imports it (the runtime read as one path, first of all)", () => {
    // Each file leans only on files below it, so the runtime reads from intake to effect without a way back up.
    // Recursion (a specialist's tool phase running calls that run specialists) is passed in as a function, not
    // imported back; a shape two files share lives below both (the offline model's `Token`).
    const edges = importsBetween("lib", (rel) => rel.replace(/\.tsx?$/, ""));
    expect([...edges.keys()].filter((f) => f.startsWith("lib/runtime/")).length, "the walk found the runtime's imports").toBeGreaterThan(
      15,
    );
    const found = cycles(edges).map((group) =>
      group.flatMap((a) => group.filter((b) => edges.get(a)?.has(b)).map((b) => edges.get(a)!.get(b)!)),
    );
    expect(found).toEqual([]);
  });

  it("finds a cycle when there is one (the check itself)", () => {
    const edges = new Map([
      ["lib/identity", new Map([["lib/tools", "lib/identity/verification.ts → @/lib/tools/order-helpers"]])],
      ["lib/tools", new Map([["lib/identity", "lib/tools/verify-customer.ts → @/lib/identity/verification"]])],
      ["lib/db", new Map<string, string>()],
    ]);
    expect(cycles(edges)).toEqual([["lib/identity", "lib/tools"]]);
  });
});
