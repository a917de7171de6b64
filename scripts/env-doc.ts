/**
 * `npm run env:doc`: prints the Configuration tables of README.md, generated from lib/env.ts.
 * `npm run env:doc -- --write`: replaces them in README.md (the text before the first table stays).
 */
import fs from "node:fs";
import { envMarkdown } from "@/lib/env";

const tables = envMarkdown();
if (!process.argv.includes("--write")) {
  process.stdout.write(`${tables}\n`);
} else {
  const readme = fs.readFileSync("README.md", "utf8");
  const [head, rest] = readme.split(/^## Configuration\n/m);
  if (rest === undefined) throw new Error("README.md has no Configuration section");
  const next = rest.search(/^## /m);
  const section = next === -1 ? rest : rest.slice(0, next);
  const tail = next === -1 ? "" : rest.slice(next);
  const intro = section.slice(0, section.search(/^(\||\*\*)/m)).trimEnd();
  fs.writeFileSync("README.md", `${head}## Configuration\n${intro}\n\n${tables}\n${tail ? `\n${tail}` : ""}`);
  process.stdout.write("README.md: Configuration tables written\n");
}
