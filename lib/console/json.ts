/** The shape a value takes after JSON: what the browser receives from a route handler or a page. */
export type Jsonify<T> = T extends Date
  ? string
  : T extends bigint
    ? string
    : T extends (infer U)[]
      ? Jsonify<U>[]
      : T extends object
        ? { [K in keyof T]: Jsonify<T[K]> }
        : T;

/**
 * Makes server data JSON-shaped (dates → ISO strings, bigints → strings) so the first render from a page
 * and every later refetch from a route handler give the client the same types.
 */
export function jsonify<T>(value: T): Jsonify<T> {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))) as Jsonify<T>;
}
