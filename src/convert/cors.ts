/**
 * enable-cors and the cors-* annotations as an HTTPRoute CORS filter (standard channel since Gateway API v1.5), read
 * through the model's own checks (annotations/cors.ts) and then the CORS filter's (gateway/read-rule.ts), with
 * ingress-nginx's defaults. What the filter cannot say is reported and left out.
 */
import { checkOrigin } from '../model/annotations/cors.js';
import { checkCorsOrigin, CORS_LIMITS } from '../model/gateway/read-rule.js';
import { HTTP_METHODS } from '../model/gateway/types.js';
import { checkHeaderName, show } from '../model/validate.js';
import { CORS_DIFFERENCE } from './annotations.js';

/** ingress-nginx's defaults (annotations/cors.ts) */
const DEFAULT_METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'];
const DEFAULT_HEADERS =
  'DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization'.split(
    ',',
  );
const DEFAULT_MAX_AGE = 1728000;

/**
 * corsFilter is the CORS filter the annotations ask for, or null without `enable-cors: "true"`. `value` gives an
 * annotation's text (undefined when absent or blank); `report` says what was left out and why.
 */
export function corsFilter(
  value: (key: string) => string | undefined,
  report: (key: string, reason: string) => void,
): Record<string, unknown> | null {
  if (value('enable-cors') !== 'true') return null;
  report('enable-cors', `converted to a CORS filter: ${CORS_DIFFERENCE}`);
  const entries = (key: string) =>
    value(key)
      ?.split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
  const keep = <T>(key: string, list: string[] | undefined, fallback: T[], convert: (e: string) => T | string) => {
    if (list === undefined) return fallback;
    const out: T[] = [];
    for (const e of list) {
      const converted = convert(e);
      if (typeof converted === 'string' && converted.startsWith('!')) report(key, `${show(e)}${converted.slice(1)}`);
      else out.push(converted as T);
    }
    return out;
  };
  const origins = keep<string>('cors-allow-origin', entries('cors-allow-origin'), ['*'], (e) => {
    const model = checkOrigin(e);
    if (!model.ok) return `!: ${model.message}; left out`;
    const gateway = checkCorsOrigin(model.value);
    return gateway.ok ? gateway.value : '!: a CORS filter origin is * or http(s)://host[:port]; left out';
  });
  const allowOrigins = origins.includes('*') ? ['*'] : [...new Set(origins)].slice(0, CORS_LIMITS.origins);
  if (origins.length > CORS_LIMITS.origins)
    report('cors-allow-origin', `a CORS filter takes ${CORS_LIMITS.origins} origins; the rest are left out`);
  const methods = keep<string>('cors-allow-methods', entries('cors-allow-methods'), DEFAULT_METHODS, (e) =>
    (HTTP_METHODS as readonly string[]).includes(e.toUpperCase())
      ? e.toUpperCase()
      : `!: not one of ${HTTP_METHODS.join(', ')}; left out`,
  );
  const header = (e: string) => {
    if (e === '*') return e;
    const checked = checkHeaderName(e);
    return checked.ok ? checked.value : `!: ${checked.message}; left out`;
  };
  const allowHeaders = keep<string>('cors-allow-headers', entries('cors-allow-headers'), DEFAULT_HEADERS, header);
  const exposeHeaders = keep<string>('cors-expose-headers', entries('cors-expose-headers'), [], header);
  const credentials = value('cors-allow-credentials');
  if (credentials !== undefined && credentials !== 'true' && credentials !== 'false')
    report('cors-allow-credentials', `${show(credentials)} is not true or false; the default true is used`);
  const rawAge = value('cors-max-age');
  const age = rawAge === undefined || !/^[0-9]{1,10}$/.test(rawAge) ? null : Number(rawAge);
  const maxAge = age !== null && age >= 1 && age <= 2 ** 31 - 1 ? age : DEFAULT_MAX_AGE;
  if (rawAge !== undefined && maxAge !== age)
    report('cors-max-age', `${show(rawAge)} is not 1-${2 ** 31 - 1} seconds; the default ${DEFAULT_MAX_AGE} is used`);
  const starAlone = (list: string[]) => (list.includes('*') ? ['*'] : [...new Set(list)]);
  return {
    type: 'CORS',
    cors: {
      allowOrigins,
      allowMethods: starAlone(methods).slice(0, CORS_LIMITS.methods),
      allowHeaders: starAlone(allowHeaders).slice(0, CORS_LIMITS.headers),
      ...(exposeHeaders.length > 0 ? { exposeHeaders: starAlone(exposeHeaders).slice(0, CORS_LIMITS.headers) } : {}),
      allowCredentials: credentials !== 'false',
      maxAge,
    },
  };
}
