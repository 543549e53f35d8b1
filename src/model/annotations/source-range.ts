import { checkCidrList } from '../validate.js';
import { read } from './read.js';
import type { AnnotationGroup } from './types.js';

/**
 * sourceRangeGroup is allowlist-source-range (alias whitelist-source-range) and
 * denylist-source-range: `deny` lines first, then `allow` lines and `deny all`, so a denied
 * range inside an allowed one stays denied, as ingress-nginx renders them. Denied clients get 403.
 */
export const sourceRangeGroup: AnnotationGroup<'access'> = {
  name: 'SourceRange',
  field: 'access',
  keys: [
    {
      key: 'allowlist-source-range',
      aliases: ['whitelist-source-range'],
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'deny',
      support: 'supported',
      doc: 'only these comma-separated CIDRs may connect (403 otherwise); the client is $remote_addr',
    },
    {
      key: 'denylist-source-range',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'deny',
      support: 'supported',
      doc: 'these CIDRs get 403',
    },
  ],
  parse(input) {
    const allow = read(input, 'allowlist-source-range', checkCidrList) ?? [];
    const deny = read(input, 'denylist-source-range', checkCidrList) ?? [];
    if (allow.length === 0 && deny.length === 0) return null;
    return [
      ...deny.map((address) => ({ allow: false, address })),
      ...allow.map((address) => ({ allow: true, address })),
      ...(allow.length > 0 ? [{ allow: false, address: 'all' }] : []),
    ];
  },
};
