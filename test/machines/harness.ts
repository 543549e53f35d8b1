import type { SimulatedClock } from 'xstate';

/** flush lets settled promises (fromPromise test doubles) deliver their results to the actors. */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * advance moves the simulated clock forward `ms` in steps of `step`, flushing promises between
 * steps: SimulatedClock.increment fires due timers at the new time, so a timer scheduled by a
 * timer would otherwise start late by the rest of the increment.
 */
export async function advance(clock: SimulatedClock, ms: number, step = 1): Promise<void> {
  await flush();
  for (let done = 0; done < ms; done += step) {
    clock.increment(Math.min(step, ms - done));
    await flush();
  }
}

/** Deferred is a promise a test settles by hand. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** deferred makes a promise the test settles by hand. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** stateName flattens a state value: `{ alive: { stopping: 'quitting' } }` → `alive.stopping.quitting`. */
export function stateName(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    return Object.entries(value)
      .map(([key, child]) => `${key}.${stateName(child)}`)
      .join(',');
  }
  return String(value);
}
