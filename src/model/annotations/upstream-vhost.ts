import { checkHostPort } from '../validate.js';
import { read } from './read.js';
import type { AnnotationGroup } from './types.js';

/** upstreamVhostGroup is upstream-vhost: the Host header sent to the Service. */
export const upstreamVhostGroup: AnnotationGroup<'upstreamVhost'> = {
  name: 'UpstreamVhost',
  field: 'upstreamVhost',
  keys: [
    {
      key: 'upstream-vhost',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'the Host header sent upstream (a host name or IP, optionally :port)',
    },
  ],
  parse: (input) => read(input, 'upstream-vhost', checkHostPort) ?? null,
};
