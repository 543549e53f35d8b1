import { checkPath, show, type Checked } from '../validate.js';
import { read, readBool } from './read.js';
import type { AnnotationGroup } from './types.js';

/**
 * checkRewriteTarget accepts what a rewrite replacement may be here: an absolute path of plain
 * characters where `$` only introduces a capture group (`/$2`, `/api/$1`). No other variable,
 * no scheme (nginx would turn it into a redirect), no `?` (it would drop the request's query).
 */
export function checkRewriteTarget(value: string): Checked<string> {
  if (!value.startsWith('/') || value.length > 2048)
    return { ok: false, message: `${show(value)} must be a path starting with '/'` };
  if (!/^\/(?:[A-Za-z0-9._~!&()*+,=:@/-]|\$[1-9])*$/.test(value)) {
    return { ok: false, message: `${show(value)} may hold path characters and capture groups $1-$9 only` };
  }
  return { ok: true, value };
}

/** rewriteGroup is ingress-nginx's Rewrite group: rewrite-target, use-regex, app-root and the HTTPS redirects. */
export const rewriteGroup: AnnotationGroup<'rewrite'> = {
  name: 'Rewrite',
  field: 'rewrite',
  keys: [
    {
      key: 'rewrite-target',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "rewrite the URI before proxying; `$1`..`$9` are the path regex's groups",
    },
    {
      key: 'use-regex',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'partial',
      doc: 'ImplementationSpecific paths are regular expressions (`~*`)',
      note:
        'as ingress-nginx, every path of the host becomes a regex location, longest first; Exact and Prefix ' +
        'paths keep their Ingress v1 meaning there',
    },
    {
      key: 'app-root',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'redirect `/` to this path (302)',
    },
    {
      key: 'ssl-redirect',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'redirect HTTP to HTTPS (308) when the host has TLS; overrides the ConfigMap',
    },
    {
      key: 'force-ssl-redirect',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc:
        'redirect HTTP to HTTPS (308) even without TLS here ' +
        '(TLS ends in front); reads X-Forwarded-Proto with use-forwarded-headers',
    },
    {
      key: 'preserve-trailing-slash',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "the HTTPS redirect keeps the URI's trailing slash (by default one is dropped, as ingress-nginx does)",
    },
  ],
  parse(input) {
    const appRoot = read(input, 'app-root', checkPath) ?? null;
    const preserveTrailingSlash = readBool(input, 'preserve-trailing-slash') ?? false;
    return {
      preserveTrailingSlash,
      target: read(input, 'rewrite-target', checkRewriteTarget) ?? null,
      useRegex: readBool(input, 'use-regex') ?? false,
      appRoot,
      sslRedirect: readBool(input, 'ssl-redirect'),
      forceSslRedirect: readBool(input, 'force-ssl-redirect'),
    };
  },
};
