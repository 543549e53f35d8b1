/** The HTTPRoute filters an Ingress's annotations ask for: a redirect, header modifiers, CORS, a URL rewrite. */
import type { Json } from './draft.js';
import type { Redirect, Settings } from './read-settings.js';

/** ruleFilters are the filters every rule of the Ingress carries, the rule's own path rewrite included. */
export function ruleFilters(s: Settings, rewrite: Json | null): Json[] {
  if (s.redirect) return [{ type: 'RequestRedirect', requestRedirect: redirectJson(s.redirect) }];
  const filters: Json[] = [];
  if (s.forwardedPrefix !== null)
    filters.push({
      type: 'RequestHeaderModifier',
      requestHeaderModifier: { set: [{ name: 'X-Forwarded-Prefix', value: s.forwardedPrefix }] },
    });
  if (s.responseHeaders.length > 0)
    filters.push({
      type: 'ResponseHeaderModifier',
      responseHeaderModifier: { set: s.responseHeaders.map((h) => ({ ...h })) },
    });
  if (s.cors !== null) filters.push(s.cors);
  if (s.vhost !== null || rewrite !== null)
    filters.push({
      type: 'URLRewrite',
      urlRewrite: {
        ...(s.vhost === null ? {} : { hostname: s.vhost }),
        ...(rewrite === null ? {} : { path: rewrite }),
      },
    });
  return filters;
}

function redirectJson(r: Redirect): Json {
  return {
    ...(r.scheme ? { scheme: r.scheme } : {}),
    ...(r.hostname ? { hostname: r.hostname } : {}),
    ...(r.path ? { path: { type: 'ReplaceFullPath', replaceFullPath: r.path } } : {}),
    ...(r.port ? { port: r.port } : {}),
    statusCode: r.statusCode,
  };
}
