import type { SnippetDirective } from '../nginx-model.js';
import { checkSnippetDirectives, type SnippetContext } from '../snippet-policy.js';
import type { AnnotationGroup, AnnotationInput } from './types.js';

function snippet(input: AnnotationInput, key: string, context: SnippetContext): readonly SnippetDirective[] | null {
  const raw = input.get(key);
  if (raw === undefined) return null;
  if (!input.config.allowSnippetAnnotations) {
    // Disabled is not a bad value: the author could not have relied on it, so it is ignored, as ingress-nginx does.
    input.note(
      key,
      'snippets are disabled: they need allow-snippet-annotations: "true" and annotations-risk-level: Critical in ' +
        'the controller ConfigMap',
    );
    return null;
  }
  const checked = checkSnippetDirectives(raw, context, {
    annotated: (other) => input.get(other) !== undefined,
    modules: input.modules,
  });
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
 * then every directive must be on the allow-list of its context (src/model/snippet-policy.ts).
 * Disabled snippets are ignored. A configuration-snippet the allow-list refuses fails closed (its
 * allow and deny lines could be what guards the locations); a refused server-snippet (headers
 * only) is ignored.
 */
export const snippetsGroup: AnnotationGroup<'snippets'> = {
  name: 'Snippets',
  field: 'snippets',
  keys: [
    {
      key: 'configuration-snippet',
      risk: 'Critical',
      scope: 'location',
      onInvalid: 'deny',
      support: 'partial',
      doc: 'directives in each location; needs allow-snippet-annotations "true" and annotations-risk-level Critical',
      note:
        'only the directives of the location allow-list below, one per statement, no blocks (no if), values with ' +
        'the listed variables only; the directives are re-printed from what was checked',
    },
    {
      key: 'server-snippet',
      risk: 'Critical',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'partial',
      doc: 'directives in the server block of each host; once per host (the oldest Ingress wins)',
      note:
        'it applies to every Ingress on the host, so only the server allow-list below (add_header, without ' +
        'session, redirect or framing headers)',
    },
  ],
  parse: (input) => ({
    configuration: snippet(input, 'configuration-snippet', 'location'),
    server: snippet(input, 'server-snippet', 'server'),
  }),
};
