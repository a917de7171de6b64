// How a shop's order numbers compare, whoever typed them: the tools' reads and the identity check's alike.
/** Order numbers as the shop writes them: "a1002", "A 1002", "#A-1002" and " a-1002 " are all A-1002. */
export function normaliseOrderNumber(raw: string): string {
  const compact = raw.trim().toUpperCase().replace(/^#/, "");
  const m = compact.match(/^([A-Z]{1,3})[\s-]?(\d{3,6})$/);
  return m ? `${m[1]}-${m[2]}` : compact;
}
