/**
 * Vitest setup (vitest.config.ts `setupFiles`): a test during which xstate prints one of the
 * warnings below fails, naming it. Each is a defect at its cause, never noise:
 * - "Custom actions should not call `assign()` / `raise()` / `sendTo()` / `emit()` directly": an
 *   action that does its work imperatively (a custom action that `send()`s to another actor makes
 *   the receiver's whole step, and its own enqueued assign/raise, run inside it).
 * - "Event … was sent to stopped actor": something outlived the actor it reports to.
 */
import { afterAll, afterEach, beforeEach } from 'vitest';

/** XSTATE_WARNINGS are the texts of xstate's warnings that fail a test. */
export const XSTATE_WARNINGS: readonly RegExp[] = [
  /Custom actions should not call `\w+\(\)` directly/,
  /was sent to stopped actor/,
];

/** isXstateWarning says whether a console.warn line is one of XSTATE_WARNINGS. */
export function isXstateWarning(text: string): boolean {
  return XSTATE_WARNINGS.some((pattern) => pattern.test(text));
}

/**
 * collectXstateWarnings wraps console.warn (still printing) and returns the xstate warnings it
 * saw from now on; `stop()` puts console.warn back.
 */
export function collectXstateWarnings(): { readonly seen: string[]; stop(): void } {
  const seen: string[] = [];
  const original = console.warn;
  console.warn = (...args: unknown[]) => {
    const text = args.map(String).join(' ');
    if (isXstateWarning(text)) seen.push(text.split('\n')[0]!);
    original.apply(console, args);
  };
  return { seen, stop: () => void (console.warn = original) };
}

const warnings = collectXstateWarnings();
const check = (when: string) => {
  const seen = warnings.seen.splice(0);
  if (seen.length > 0)
    throw new Error(
      `xstate warned ${when} (fix ` +
        `the cause, see test/support/xstate-warnings.ts):\n  ${[...new Set(seen)].join('\n  ')}`,
    );
};
// A warning printed between tests (a hook, a late timer) is reported by the next check.
beforeEach(() => check('before this test, in a hook or after the previous test'));
afterEach(() => check('during this test'));
afterAll(() => check('after the last test of this file'));
