// CSV as spreadsheets read it (RFC 4180): a cell with a quote, comma or line break is quoted, quotes doubled.
// A text cell that a spreadsheet would run as a formula (= + - @, or a leading tab / carriage return) is
// prefixed with ' so it stays text: exported runs carry customer-typed text.

const FORMULA_START = /^[=+\-@\t\r]/;

/** One cell. Numbers are written as they are (a negative number is data, not a formula). */
export function csvCell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One line, ending in CRLF as the RFC says. */
export function csvRow(cells: ReadonlyArray<string | number | boolean | null | undefined>): string {
  return `${cells.map(csvCell).join(",")}\r\n`;
}
