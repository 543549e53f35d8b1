import { readBool } from './read.js';
import type { AnnotationGroup } from './types.js';

/**
 * sslPassthroughGroup is ssl-passthrough: TLS to the host goes to the Service of its `/` path as it is, routed by SNI
 * in nginx's stream module (src/model/stream.ts). It needs `--enable-ssl-passthrough`; without it the annotation is
 * reported and ignored, as ingress-nginx does.
 */
export const sslPassthroughGroup: AnnotationGroup<'sslPassthrough'> = {
  name: 'SSLPassthrough',
  field: 'sslPassthrough',
  keys: [
    {
      key: 'ssl-passthrough',
      risk: 'Low',
      scope: 'ingress',
      support: 'supported',
      // ingress-nginx reads it with GetBoolAnnotation: a value that is not a boolean is passthrough off.
      onInvalid: 'ignore',
      doc:
        "TLS connections to the host's name (SNI) go to the Service of its `/` path without being decrypted; needs " +
        '`--enable-ssl-passthrough`. HTTP to the host is still served by nginx (force-ssl-redirect redirects it)',
    },
  ],
  parse: (input) => readBool(input, 'ssl-passthrough') ?? false,
};
