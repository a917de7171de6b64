/**
 * The environment variables a test file changes, as they were when it started; `restore()` puts them back (a variable
 * that was unset is unset again), for the next file in the same worker sees what this one changed.
 */
export function savedEnv(...names: string[]): { restore(): void } {
  const saved = new Map(names.map((name) => [name, process.env[name]]));
  return {
    restore() {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    },
  };
}
