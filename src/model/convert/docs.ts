import { ANNOTATION_PREFIX } from '../annotations/types.js';
import { convertRules, TIMEOUT_DIFFERENCE } from './annotations.js';

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** convertDocs is docs/convert.md: what `convert` makes of every annotation, generated from the verdict table. */
export function convertDocs(): string {
  const rows = convertRules().map(
    (r) => `| \`${r.key}\` | ${r.verdict} | ${cell(r.gateway) || '-'} | ${cell(r.reason) || '-'} |`,
  );
  return [
    '# `ingress-actors convert`: Ingress to Gateway API',
    '',
    'Generated from `src/model/convert/annotations.ts` (`npm run docs`); a test fails when this file is stale.',
    '',
    '`ingress-actors convert --manifests PATH…` reads Ingresses (files, folders, `-` for stdin, as `render` does) and',
    'prints Gateway API objects of the standard channel on stdout: a GatewayClass (`--gateway-class-name`, default',
    '`ingress-actors`, controllerName `ingress-actors.io/gateway-controller`; `--no-gateway-class` leaves it out), one',
    'Gateway per IngressClass in use (`--gateway-name`, a prefix when there are several; `--gateway-namespace`, by',
    'default the namespace its Ingresses share, else `default`) with an HTTP listener `http` on port 80 and, for each',
    'TLS host, an HTTPS listener on 443 with that hostname and its Secret as certificateRef (a ReferenceGrant in the',
    "Secret's namespace when that is not the Gateway's), and one HTTPRoute per Ingress and host. stderr lists, one line",
    'each as `namespace/name: field: reason`, every annotation or Ingress feature the output does not express, or',
    'expresses with a difference. Exit 0 when it converted (whatever stderr lists), 1 on invalid YAML or a path it',
    "cannot read, 2 on a bad flag. An Ingress whose IngressClass, when the manifests hold it, is another controller's",
    'than `--controller-class` (`k8s.io/ingress-nginx`) is left out, with a line saying so.',
    '',
    '## Ingress features',
    '',
    '- Paths: `Exact` → `Exact`, `Prefix` → `PathPrefix` (both element-wise), `ImplementationSpecific` → `PathPrefix`,',
    '  or with use-regex (or a rewrite-target) a `RegularExpression` anchored at both ends as Gateway API reads it',
    "  (`.*` appended unless the regex ends in `$`; the regex must lie in the project's safe subset).",
    '- Backends: `backendRefs` with the Service port number; a named port is looked up in the Service when the',
    '  manifests hold it, else reported and left out. Ingress backends are in the Ingress namespace, so routes never',
    '  need a ReferenceGrant for them. A `resource` backend is left out, as ingress-nginx leaves it.',
    "- `spec.defaultBackend`: a `/` PathPrefix rule on each of the Ingress's hosts that has no `/` of its own, or a",
    '  route without hostnames when the Ingress has no rules.',
    "- TLS hosts: the route attaches to the host's HTTPS listener; the HTTP listener gets a second route,",
    '  `<name>-https-redirect`, with the same matches and a RequestRedirect to https, unless ssl-redirect is "false".',
    '  It answers 308, as ingress-nginx does (`http-redirect-code`): the standard channel takes 308 since Gateway API',
    '  v1.5 (the CRDs in deploy/gateway-api are v1.6); with v1.2 to v1.4 CRDs, which take 301 and 302 only, the API',
    '  server refuses the redirect routes.',
    '- Canary Ingresses fold into the route of the Ingress they shadow (same IngressClass, host and path).',
    '- Names: an Ingress with several hosts gives `<name>-<host>` routes, and a host with more rules than one route',
    '  holds (16) `<name>-2`, `<name>-3`…; where such a name is not a valid object name (a DNS label of more than 63',
    "  characters, or more than 253 in all), its start is shortened and 8 hex digits of the full name's sha256 added,",
    '  so that every object keeps a name of its own and the same one on every run.',
    '- Not expressed, and not reported per Ingress: ingress-nginx also serves every host, and the rules without a host,',
    '  on its HTTPS port with the default certificate; the converted Gateway serves HTTPS only for the TLS hosts.',
    '  ingress-nginx turns every path of a host into a regex when one Ingress there uses regexes, which changes',
    "  precedence; Gateway API's precedence rules apply to the converted routes instead.",
    `- proxy-read-timeout / proxy-send-timeout: ${TIMEOUT_DIFFERENCE}.`,
    '',
    '## Annotations',
    '',
    `Keys without the \`${ANNOTATION_PREFIX}\` prefix. converted: the same behaviour; approximated: converted, with the`,
    'difference reported on stderr each time it applies; unexpressible: reported on stderr and left out.',
    '',
    '| annotation | verdict | Gateway API | reported |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
