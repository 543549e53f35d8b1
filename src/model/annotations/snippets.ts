import { checkSnippet } from './snippet-check.js';
import type { AnnotationGroup, AnnotationInput } from './types.js';

function snippet(input: AnnotationInput, key: string): readonly string[] | null {
  const raw = input.get(key);
  if (raw === undefined) return null;
  if (!input.config.allowSnippetAnnotations) {
    input.invalid(key, 'snippets are disabled (ConfigMap allow-snippet-annotations is not "true")');
    return null;
  }
  const checked = checkSnippet(raw);
  if (!checked.ok) {
    input.invalid(key, checked.message);
    return null;
  }
  return checked.value;
}

/**
 * snippetsGroup is configuration-snippet (each location of the Ingress) and server-snippet
 * (the server of each of its hosts, once per host). Refused unless the ConfigMap has
 * allow-snippet-annotations "true" and annotations-risk-level Critical (both Critical risk), and
 * then checked against the blocklist; a refused snippet leaves its Ingress out, since serving
 * without it could be less safe than the author meant.
 */
export const snippetsGroup: AnnotationGroup<'snippets'> = {
  name: 'Snippets',
  field: 'snippets',
  keys: [
    {
      key: 'configuration-snippet',
      risk: 'Critical',
      scope: 'location',
      support: 'partial',
      doc: 'raw directives in each location; needs allow-snippet-annotations "true" and annotations-risk-level Critical',
      note: 'checked against the blocklist (no files, Lua, *_pass, include, location...); only if blocks; a snippet nginx rejects makes nginx -t fail and the last good config stays',
    },
    {
      key: 'server-snippet',
      risk: 'Critical',
      scope: 'ingress',
      support: 'partial',
      doc: 'raw directives in the server block of each host; once per host (the oldest Ingress wins)',
      note: 'as configuration-snippet; it applies to every Ingress on the host',
    },
  ],
  parse: (input) => ({ configuration: snippet(input, 'configuration-snippet'), server: snippet(input, 'server-snippet') }),
};
