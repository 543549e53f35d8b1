/**
 * The bounded sets the request metrics' `status` and `method` labels take their values from. nginx's monitor
 * (lua/ingress_actors/monitor.lua) maps each request into them already; the controller maps what it drains again, so
 * the bound holds whatever text arrives. A backend chooses its status code, a client its method: neither may add
 * label values at will (ingress-nginx takes both as they come).
 */

/**
 * STATUS_CODES are the status codes counted as themselves: the IANA-registered ones, 418, and nginx's own (444,
 * 494–497, 499). The same list is in monitor.lua (test/unit/request-metric-bounds.test.ts compares them).
 */
export const STATUS_CODES: ReadonlySet<string> = new Set(
  [
    [100, 101, 102, 103],
    [200, 201, 202, 203, 204, 205, 206, 207, 208, 226],
    [300, 301, 302, 303, 304, 305, 307, 308],
    [400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418],
    [421, 422, 423, 424, 425, 426, 428, 429, 431, 451],
    [444, 494, 495, 496, 497, 499],
    [500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511],
  ]
    .flat()
    .map(String),
);

/** OTHER_STATUS is the label of what is no three-digit code from 100 up (nginx's `000`). */
export const OTHER_STATUS = 'other';

/** METHODS are the methods counted as themselves; any other is `OTHER`, as monitor.lua counts it. */
export const METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

/**
 * statusLabel is a status's label value: the code itself when registered, else its class (`299` → `2xx`, `999` →
 * `9xx`, so `status=~"5.."` and ingress-nginx's dashboards' `status!~"[4-5].*"` still read it right), else `other`.
 * It maps its own values to themselves, so nginx's already mapped statuses pass unchanged.
 */
export function statusLabel(status: string): string {
  if (STATUS_CODES.has(status)) return status;
  // a class is what monitor.lua sends for an unregistered code: it stays itself
  return /^[1-9](?:[0-9][0-9]|xx)$/.test(status) ? `${status[0]}xx` : OTHER_STATUS;
}

/** statusClass is a status label's class for `--report-status-classes` (`404` → `4xx`; `other` stays). */
export function statusClass(label: string): string {
  return label === OTHER_STATUS ? label : `${label[0]}xx`;
}

/** methodLabel is a method's label value: one of METHODS, else `OTHER`. */
export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : 'OTHER';
}
