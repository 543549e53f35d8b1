import { checkHeaderName, show, type Checked } from '../validate.js';
import { checkCookieName } from './affinity.js';
import { intIn, read, readBool } from './read.js';
import type { AnnotationGroup } from './types.js';

/** checkCanaryHeaderValue accepts a canary-by-header-value: letters, digits and `. _ ~ : / + = -`. */
export function checkCanaryHeaderValue(value: string): Checked<string> {
  if (value.length <= 256 && /^[A-Za-z0-9._~:/+=-]{1,256}$/.test(value)) return { ok: true, value };
  return { ok: false, message: `${show(value)} may hold letters, digits and . _ ~ : / + = - only` };
}

const CANARY_KEYS = [
  'canary-by-header',
  'canary-by-header-value',
  'canary-by-cookie',
  'canary-weight',
  'canary-weight-total',
];

/**
 * canaryGroup is canary and its rules, without Lua: per route, maps on the header and the
 * cookie and a split_clients on $request_id pick the upstream, by precedence header, cookie,
 * weight. The canary Ingress's other annotations are ignored (its main Ingress's apply).
 */
export const canaryGroup: AnnotationGroup<'canary'> = {
  name: 'Canary',
  field: 'canary',
  keys: [
    {
      key: 'canary',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'partial',
      doc: 'this Ingress is the canary of the Ingress serving the same host and path',
      note: 'one canary per route; sticky canary with affinity (affinity-canary-behavior) is not implemented',
    },
    {
      key: 'canary-by-header',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'header `always` sends to the canary, `never` to the main; anything else falls through',
    },
    {
      key: 'canary-by-header-value',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'the header value that sends to the canary (instead of always)',
    },
    {
      key: 'canary-by-cookie',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'cookie `always` / `never`, as the header; letters, digits and _ - . ~ in the name',
    },
    {
      key: 'canary-weight',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'share of the remaining requests sent to the canary, out of canary-weight-total (random per request)',
    },
    {
      key: 'canary-weight-total',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'default 100',
    },
  ],
  parse(input) {
    const enabled = readBool(input, 'canary') ?? false;
    const header = read(input, 'canary-by-header', checkHeaderName);
    const headerValue = read(input, 'canary-by-header-value', checkCanaryHeaderValue);
    const cookie = read(input, 'canary-by-cookie', checkCookieName);
    const total = read(input, 'canary-weight-total', intIn(1, 1_000_000)) ?? 100;
    const weight = read(input, 'canary-weight', intIn(0, 1_000_000));
    if (!enabled) {
      for (const key of CANARY_KEYS)
        if (input.get(key) !== undefined) input.note(key, 'has no effect without canary: "true"');
      return null;
    }
    if (weight !== undefined && weight > total)
      input.invalid('canary-weight', `${weight} is above canary-weight-total ${total}`);
    if (headerValue !== undefined && header === undefined)
      input.note('canary-by-header-value', 'has no effect without canary-by-header');
    return {
      header:
        header === undefined
          ? null
          : { variable: `$http_${header.toLowerCase().replaceAll('-', '_')}`, value: headerValue ?? null },
      cookie: cookie ?? null,
      weight: weight === undefined ? null : weight / total,
    };
  },
};
