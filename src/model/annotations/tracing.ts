import { checkOperationName } from '../config-map/validators.js';
import { read, readBool } from './read.js';
import type { AnnotationGroup } from './types.js';

/**
 * tracingGroup is enable-opentelemetry, opentelemetry-trust-incoming-span and opentelemetry-operation-name: this
 * Ingress's locations traced or not, whether an incoming traceparent is trusted, and its spans' name, over the
 * ConfigMap's keys of the same names (null: the ConfigMap's).
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
    {
      key: 'opentelemetry-operation-name',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc:
        "this Ingress's span name, over the ConfigMap's: the same variables ($request_method, $host, $uri, " +
        '$location_path, $namespace, $ingress_name, $service_name), no other',
    },
  ],
  parse: (input) => ({
    enabled: readBool(input, 'enable-opentelemetry'),
    trustIncoming: readBool(input, 'opentelemetry-trust-incoming-span'),
    operationName: read(input, 'opentelemetry-operation-name', checkOperationName) ?? null,
  }),
};
