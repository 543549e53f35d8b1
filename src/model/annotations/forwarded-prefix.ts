import { show, type Checked } from '../validate.js';
import { read } from './read.js';
import type { AnnotationGroup } from './types.js';

/** checkPrefix accepts a path prefix of plain characters, as a backend behind a rewrite wants to hear it. */
export function checkPrefix(value: string): Checked<string> {
  return value.length <= 256 && /^\/[A-Za-z0-9._~!&()*+,=:@/%-]{0,255}$/.test(value)
    ? { ok: true, value }
    : { ok: false, message: `${show(value)} is not a path of plain characters` };
}

/**
 * forwardedPrefixGroup is x-forwarded-prefix: the X-Forwarded-Prefix header sent upstream (the path the backend is
 * served under).
 */
export const forwardedPrefixGroup: AnnotationGroup<'forwardedPrefix'> = {
  name: 'XForwardedPrefix',
  field: 'forwardedPrefix',
  keys: [
    {
      key: 'x-forwarded-prefix',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'the X-Forwarded-Prefix header sent upstream (a path)',
    },
  ],
  parse: (input) => read(input, 'x-forwarded-prefix', checkPrefix) ?? null,
};
