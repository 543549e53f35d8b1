import { intIn, read } from './read.js';
import type { AnnotationGroup } from './types.js';

/**
 * rateLimitGroup is limit-rps, limit-rpm and limit-connections, per client address
 * ($binary_remote_addr), with ingress-nginx's zones (5m each, one per Ingress) and burst
 * (limit times limit-burst-multiplier, 5 by default, nodelay). Over the limit nginx answers
 * limit-req-status-code / limit-conn-status-code (503 by default).
 */
export const rateLimitGroup: AnnotationGroup<'rateLimit'> = {
  name: 'RateLimit',
  field: 'rateLimit',
  keys: [
    {
      key: 'limit-rps',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'requests per second per client address',
    },
    {
      key: 'limit-rpm',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'requests per minute per client address (limit-rps wins when both are set)',
    },
    {
      key: 'limit-connections',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "concurrent connections per client address (at most 65535, nginx's limit)",
    },
    {
      key: 'limit-burst-multiplier',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'burst = limit times this (default 5)',
    },
  ],
  parse(input) {
    // 0 means off, as in ingress-nginx.
    const count = intIn(0, 1_000_000);
    const rps = read(input, 'limit-rps', count) || null;
    const rpm = read(input, 'limit-rpm', count) || null;
    // limit_conn takes at most 65535 ("connection limit must be less 65536").
    const connections = read(input, 'limit-connections', intIn(0, 65535)) || null;
    const burstMultiplier = read(input, 'limit-burst-multiplier', intIn(1, 1000)) ?? 5;
    return rps === null && rpm === null && connections === null ? null : { rps, rpm, connections, burstMultiplier };
  },
};
