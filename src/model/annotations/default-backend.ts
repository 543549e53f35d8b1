import { checkDnsLabel } from '../validate.js';
import { read } from './read.js';
import type { AnnotationGroup } from './types.js';

/**
 * defaultBackendGroup is default-backend: a Service of the Ingress's namespace for paths without endpoints and for
 * custom-http-errors.
 */
export const defaultBackendGroup: AnnotationGroup<'defaultBackend'> = {
  name: 'DefaultBackend',
  field: 'defaultBackend',
  keys: [
    {
      key: 'default-backend',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc:
        "a Service (same namespace, first port) that answers when a path's Service is missing or has no endpoints " +
        "(told so with ingress-nginx's X-Code 503, X-Namespace, X-Ingress-Name, X-Service-Name, X-Service-Port), " +
        'and the errors of custom-http-errors',
    },
  ],
  parse: (input) => read(input, 'default-backend', checkDnsLabel) ?? null,
};
