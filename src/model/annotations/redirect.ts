import { checkHttpUrl } from '../validate.js';
import { intIn, read } from './read.js';
import type { AnnotationGroup } from './types.js';

/** redirectGroup is ingress-nginx's Redirect group: nginx answers a redirect instead of proxying. */
export const redirectGroup: AnnotationGroup<'redirect'> = {
  name: 'Redirect',
  field: 'redirect',
  keys: [
    {
      key: 'permanent-redirect',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'answer every request with a redirect to this http(s) URL (301)',
    },
    {
      key: 'permanent-redirect-code',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "the permanent redirect's status (300-308)",
    },
    {
      key: 'temporal-redirect',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'as permanent-redirect, with 302; wins when both are set (as ingress-nginx)',
    },
    {
      key: 'temporal-redirect-code',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "the temporal redirect's status (300-308)",
    },
  ],
  parse(input) {
    const code = intIn(300, 308);
    const temporalCode = read(input, 'temporal-redirect-code', code) ?? 302;
    const permanentCode = read(input, 'permanent-redirect-code', code) ?? 301;
    const temporal = read(input, 'temporal-redirect', checkHttpUrl);
    const permanent = read(input, 'permanent-redirect', checkHttpUrl);
    if (temporal !== undefined) return { code: temporalCode, url: temporal };
    if (permanent !== undefined) return { code: permanentCode, url: permanent };
    return null;
  },
};
