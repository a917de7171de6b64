import { describe, expect, it } from "vitest";
import { csvCell, csvRow } from "./csv";

describe("CSV cells", () => {
  it.each([
    { name: "plain text", value: "Dana Reyes", cell: "Dana Reyes" },
    { name: "a comma", value: "Reyes, Dana", cell: '"Reyes, Dana"' },
    { name: "quotes are doubled", value: 'said "refund"', cell: '"said ""refund"""' },
    { name: "a line break", value: "line one\nline two", cell: '"line one\nline two"' },
    { name: "a carriage return", value: "a\rb", cell: '"a\rb"' },
    { name: "a formula", value: '=HYPERLINK("http://x")', cell: '"\'=HYPERLINK(""http://x"")"' },
    { name: "a plus", value: "+1 555", cell: "'+1 555" },
    { name: "a minus", value: "-2+3", cell: "'-2+3" },
    { name: "an at sign", value: "@SUM(A1)", cell: "'@SUM(A1)" },
    { name: "a leading tab", value: "\t=1", cell: "'\t=1" },
    { name: "a number stays a number", value: -0.25, cell: "-0.25" },
    { name: "null is empty", value: null, cell: "" },
    { name: "an email is not a formula", value: "dana@example.com", cell: "dana@example.com" },
  ])("$name", ({ value, cell }) => {
    expect(csvCell(value)).toBe(cell);
  });

  it("joins a row with commas and ends it with CRLF", () => {
    expect(csvRow(["a", 1, null, "b,c"])).toBe('a,1,,"b,c"\r\n');
  });
});
