/**
 * Validators for Gateway API fields the Ingress validators do not cover. Allow-lists, linear time,
 * in the style of ../validate.ts.
 */
import { type Checked, show } from '../validate.js';

/** Header values without what nginx or Lua treat specially: no `$`, quotes, `\`, `;`, `{`, `}`, `#` or controls. */
const HEADER_VALUE = /^[A-Za-z0-9._~:/+=,@()*!&%?<>[\]^|` -]*$/;

/** checkHeaderValue accepts a header value of at most 4096 plain printable characters (inner spaces allowed). */
export function checkHeaderValue(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length > 4096)
    return { ok: false, message: 'must be a string of at most 4096 characters' };
  if (!HEADER_VALUE.test(value) || value !== value.trim()) {
    return {
      ok: false,
      message: `${show(value)} has characters outside the plain printable set (no $ " ' \\ ; { } # or edge spaces)`,
    };
  }
  return { ok: true, value };
}

/** checkQueryParamName accepts a query parameter name of RFC 3986 unreserved characters. */
export function checkQueryParamName(value: unknown): Checked<string> {
  if (typeof value === 'string' && /^[A-Za-z0-9._~-]{1,256}$/.test(value)) return { ok: true, value };
  return { ok: false, message: `${show(value)} is not a query parameter name (letters, digits and . _ ~ -)` };
}

/** checkLabelValue accepts a Kubernetes label value (for label selectors). */
export function checkLabelValue(value: unknown): Checked<string> {
  if (typeof value === 'string' && value.length <= 63 && /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/.test(value))
    return { ok: true, value };
  return { ok: false, message: `${show(value)} is not a label value` };
}

/** checkLabelKey accepts a Kubernetes label key: an optional DNS prefix and `/`, then a name. */
export function checkLabelKey(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0 || value.length > 317)
    return { ok: false, message: 'must be a label key' };
  const slash = value.lastIndexOf('/');
  const name = value.slice(slash + 1);
  const prefix = slash < 0 ? '' : value.slice(0, slash);
  const nameOk = name.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name);
  const prefixOk = slash < 0 || (prefix.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(prefix));
  return nameOk && prefixOk ? { ok: true, value } : { ok: false, message: `${show(value)} is not a label key` };
}

// The Gateway API's GatewayController format: a domain-prefixed path (gateway-api's apis/v1/shared_types.go).
const GATEWAY_CONTROLLER =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;

/** isGatewayControllerName says whether `name` is a GatewayClass controllerName: a domain-prefixed path, ≤ 253. */
export function isGatewayControllerName(name: string): boolean {
  return name.length <= 253 && GATEWAY_CONTROLLER.test(name);
}
