import { afterEach, describe, expect, it } from "vitest";
import { nextBin, nextStartArgs } from "../scripts/app-build";

const before = process.env.NODE_OPTIONS;
afterEach(() => {
  if (before === undefined) delete process.env.NODE_OPTIONS;
  else process.env.NODE_OPTIONS = before;
});

describe("nextStartArgs", () => {
  it("starts the production server with a larger young generation", () => {
    delete process.env.NODE_OPTIONS;
    expect(nextStartArgs(3000)).toEqual(["--max-semi-space-size=64", nextBin, "start", "-p", "3000", "--keepAliveTimeout", "65000"]);
  });

  it("leaves the young generation to NODE_OPTIONS when it sets one", () => {
    process.env.NODE_OPTIONS = "--max-semi-space-size=16 --enable-source-maps";
    expect(nextStartArgs("3100")).toEqual([nextBin, "start", "-p", "3100", "--keepAliveTimeout", "65000"]);
  });
});
