import { readBool } from './read.js';
import type { AnnotationGroup } from './types.js';

/**
 * tracingGroup is enable-opentelemetry and opentelemetry-trust-incoming-span: this Ingress's locations traced or not,
 * and whether an incoming traceparent is trusted, over the ConfigMap's keys of the same names (null: the ConfigMap's).
 */
export const tracingGroup: AnnotationGroup<'tracing'> = {
  name: 'OpenTelemetry',
  field: 'tracing',
  keys: [
    {
      key: 'enable-opentelemetry',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc:
        "a server span for each request of this Ingress, or none, whatever the ConfigMap's enable-opentelemetry " +
        '(needs the Lua balancer: --dynamic-backends)',
    },
    {
      key: 'opentelemetry-trust-incoming-span',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "a valid incoming traceparent is the span's parent (false: a new trace)",
    },
  ],
  parse: (input) => ({
    enabled: readBool(input, 'enable-opentelemetry'),
    trustIncoming: readBool(input, 'opentelemetry-trust-incoming-span'),
  }),
};
