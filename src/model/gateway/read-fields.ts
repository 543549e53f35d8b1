/**
 * What every Gateway API reader walks with: total accessors for untrusted JSON (a wrong shape reads as empty, never
 * throws) and the Collector that records each refused value as `field: message`.
 */
import { type Checked, show } from '../validate.js';

/** Invalid is one refused value: its field path and why. */
export interface Invalid {
  readonly field: string;
  readonly message: string;
}

export type Rec = Readonly<Record<string, unknown>>;

export const rec = (value: unknown): Rec =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Rec) : {};
export const list = (value: unknown): readonly unknown[] => (Array.isArray(value) ? value : []);
export const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Collector gathers refused values while a reader walks an object. */
export class Collector {
  readonly invalid: Invalid[] = [];
  refuse(field: string, message: string): undefined {
    this.invalid.push({ field, message });
    return undefined;
  }
  check<T>(field: string, checked: Checked<T>): T | undefined {
    return checked.ok ? checked.value : this.refuse(field, checked.message);
  }
  /** optional checks a field only when present. */
  optional<T>(field: string, value: unknown, checker: (v: unknown) => Checked<T>): T | undefined {
    return value === undefined || value === null ? undefined : this.check(field, checker(value));
  }
  oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T): T | undefined {
    if (value === undefined || value === null) return fallback;
    if ((allowed as readonly unknown[]).includes(value)) return value as T;
    return this.refuse(field, `${show(value)} is not one of ${allowed.join(', ')}`);
  }
}
