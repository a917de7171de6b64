/**
 * How an address is shown to the model and the customer: never in full, even to a verified customer — a
 * conversation can be read over a shoulder, and a tool result is text the model may repeat. The city, the
 * country, the first characters of the postcode and the last characters of the street line are enough to
 * recognise one's own address. Staff views read the stored address, unmasked.
 */
export interface MaskedAddress {
  city: string;
  country: string;
  /** At most 3 characters and never more than half the postcode: the rest stays a secret worth asking for. */
  postcode_starts: string;
  street_ends: string;
  /** One line for a reply: "…reet, Portland 97…, US". */
  masked: string;
}

const STREET_TAIL = 4;

export function maskAddress(address: unknown): MaskedAddress | null {
  if (!address || typeof address !== "object" || Array.isArray(address)) return null;
  const a = address as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === "string" ? v.trim() : "");
  const line1 = text(a.line1);
  const postcode = text(a.postalCode).replace(/\s+/g, "");
  const city = text(a.city);
  const country = text(a.country);
  const streetEnds = line1.replace(/\s+/g, " ").slice(-Math.min(STREET_TAIL, Math.floor(line1.length / 2)));
  const postcodeStarts = postcode.slice(0, Math.min(3, Math.floor(postcode.length / 2)));
  const parts = [streetEnds ? `…${streetEnds}` : "", [city, postcodeStarts ? `${postcodeStarts}…` : ""].filter(Boolean).join(" "), country];
  return {
    city,
    country,
    postcode_starts: postcodeStarts,
    street_ends: streetEnds,
    masked: parts.filter(Boolean).join(", "),
  };
}
