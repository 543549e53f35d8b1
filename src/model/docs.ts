import {
  CONFIG_RULE_IDS,
  MODSECURITY_DIRECTIVES,
  OPERATORS,
  REFUSED_MODSECURITY,
  TENANT_RULE_IDS,
  VARIABLES,
} from './modsecurity-policy.js';
import { supportedKeys } from './annotations/registry.js';
import { refusedAnnotations } from './annotations/refused.js';
import { OPTIONAL_MODULES } from './optional-modules.js';
import { ANNOTATION_PREFIX, type OnInvalid } from './annotations/types.js';
import { defaultGlobalConfig } from './config-map/defaults.js';
import { refusedConfigKeys } from './config-map/refused.js';
import { configKeys } from './config-map/registry.js';
import { ALLOWED_DIRECTIVES, REFUSED_REASONS, SAFE_VARIABLES, SAFE_VARIABLE_PREFIXES } from './snippet-policy.js';

function showDefault(value: unknown): string {
  if (value === null) return 'unset';
  if (Array.isArray(value)) return value.join(' ');
  if (typeof value === 'object') return Object.values(value as object).join(' ');
  return String(value);
}

/** configMapDocs is docs/configmap.md, generated from the key registry so it cannot go stale. */
export function configMapDocs(): string {
  const rows = configKeys.map((k) => {
    const fallback = k.field ? showDefault(defaultGlobalConfig[k.field]) : 'false';
    return `| \`${k.key}\` | ${k.doc} | \`${fallback.replaceAll('|', '\\|')}\` |`;
  });
  return [
    '# ConfigMap keys',
    '',
    'Generated from `src/model/config-map/` (`npm run docs`); a test fails when this file is stale.',
    "Keys and defaults are ingress-nginx's. A bad value is reported as a problem naming the key, and",
    'the default stays; an unknown key is reported and ignored.',
    '',
    '| key | nginx / meaning | default |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** modsecurityDocs is the modsecurity-snippet allow-list section, from src/model/modsecurity-policy.ts. */
function modsecurityDocs(): string[] {
  const code = (xs: readonly string[]) => xs.map((x) => `\`${x}\``).join(', ');
  return [
    '## modsecurity-snippet allow-list',
    '',
    "modsecurity-snippet is read as ModSecurity reads its configuration, after nginx's single-quote escapes",
    "(`\\\"`, `\\'`, `\\\\`) are undone, as ingress-nginx's `modsecurity_rules '…'` undid them: one directive a line",
    '(a trailing `\\` joins lines), words and double-quoted strings, `#` comments; at most 64 directives and 16 KiB.',
    "Each directive must be in this table, its arguments checked, and is printed again as checked into the Ingress's",
    "locations' own rule set (a tenant's `SecRuleEngine Off` is its own). A refused snippet fails closed (503).",
    `Rule ids: ${TENANT_RULE_IDS.min}–${TENANT_RULE_IDS.max} in an annotation, ${CONFIG_RULE_IDS.min}–` +
      `${CONFIG_RULE_IDS.max} in the ConfigMap's modsecurity-snippet (the controller's own are 200000–299999, the`,
    "CRS's 900000 and up); each rule needs one, once. Regexes (`@rx`, a bare operator, a `/regex/` key) are of",
    'the linear subset the path regexes use; `%{…}` expansions name only `tx.` variables, `MATCHED_VAR` or',
    '`MATCHED_VAR_NAME`.',
    '',
    '| directive | arguments |',
    '|---|---|',
    ...Object.entries(MODSECURITY_DIRECTIVES).map(([name, d]) => `| \`${name}\` | ${cell(d.doc)} |`),
    '',
    `SecRule variables (with \`!\`, \`&\` and a \`:key\` or \`:/regex/\`): ${code(VARIABLES)}.`,
    '',
    `Operators (with \`!\`): ${code(OPERATORS.map((o) => `@${o}`))}.`,
    '',
    'Actions: `id`, `phase`, `deny`, `block`, `pass`, `drop`, `allow`, `status`, `log`, `nolog`, `auditlog`,',
    '`noauditlog`, `capture`, `multiMatch`, `chain`, `msg`, `logdata`, `tag`, `rev`, `ver`, `severity`, `maturity`,',
    '`accuracy`, `skip`, `t:` (the pure transformations), `setvar:tx.…`, and `ctl:` `ruleEngine`,',
    '`requestBodyAccess`, `requestBodyProcessor`, `ruleRemoveById`, `ruleRemoveByTag`, `ruleRemoveTargetById`,',
    '`ruleRemoveTargetByTag`.',
    '',
    'Refused, with the reason the problem gives (everything not in the table above is refused too):',
    '',
    '| directive | why |',
    '|---|---|',
    ...Object.entries(REFUSED_MODSECURITY).map(([name, why]) => `| \`${name}\` | ${cell(why)} |`),
    '',
  ];
}

/** snippetDocs is the snippet allow-list section of docs/annotations.md, from src/model/snippet-policy.ts. */
function snippetDocs(): string[] {
  const rows = ALLOWED_DIRECTIVES.map((d) => {
    const notes = [
      d.once ? 'once per snippet' : '',
      d.annotation ? `not beside the annotation \`${d.annotation}\`` : '',
      d.module ? `needs ${OPTIONAL_MODULES[d.module].debian}` : '',
    ]
      .filter(Boolean)
      .join('; ');
    return `| \`${d.name}\` | ${cell(d.usage)} | ${d.contexts.join(', ')} | ${cell(notes)} |`;
  });
  const refused = Object.entries(REFUSED_REASONS).map(([name, reason]) => `| \`${name}\` | ${cell(reason)} |`);
  return [
    '## Snippet allow-list',
    '',
    'configuration-snippet and server-snippet are read as nginx reads them (words, quoted strings with',
    "nginx's escapes, `;`, comments) into plain directives; blocks (`if`, `location`) are refused. Each",
    'directive must be in this table for its context (configuration-snippet: location; server-snippet:',
    'server, which every Ingress on the host shares, so only headers that neither set sessions, redirect',
    'nor frame the body), with its arguments checked. Values are printable ASCII and may read only',
    `these variables: ${SAFE_VARIABLES.map((v) => `\`$${v}\``).join(', ')}, the families`,
    `${SAFE_VARIABLE_PREFIXES.map((p) => `\`$${p}*\``).join(', ')} and the captures \`$1\`…\`$9\`; \`\${name}\` is ` +
      'read as nginx does, and an',
    'unterminated `${` is refused. What passes is printed argument by argument through the quoting',
    'helper, so nginx reads exactly what was checked. Anything else is a problem naming the annotation',
    "and the directive, and the snippet is not rendered: a configuration-snippet fails closed (the Ingress's",
    'locations answer 503: its allow and deny lines may be what guards them), a server-snippet is ignored.',
    '',
    '| directive | arguments | contexts | notes |',
    '|---|---|---|---|',
    ...rows,
    '',
    'Refused, with the reason the problem gives (everything not in the table above is refused too):',
    '',
    '| directive | why |',
    '|---|---|',
    ...refused,
    '',
  ];
}

/** INVALID is the "invalid value" column: each OnInvalid rule in a few words. */
const INVALID: Record<OnInvalid, string> = {
  ignore: 'ignored: default',
  deny: 'fails closed: 503',
  filter: 'bad entries dropped',
};

/**
 * annotationDocs is docs/annotations.md: the compatibility table, generated from the annotation
 * registry and the ConfigMap key registry so it cannot go stale.
 */
export function annotationDocs(): string {
  const supported = supportedKeys.map(({ group, key }) => ({
    key: key.key,
    aliases: key.aliases ?? [],
    row:
      `| ${key.risk} | ${key.scope} | ${key.support} | ${INVALID[key.onInvalid]} | ` +
      `${cell(`${key.doc}${key.note ? `. Partial: ${key.note}` : ''}`)} (${group}) |`,
  }));
  const refused = refusedAnnotations.map((r) => ({
    key: r.key,
    aliases: [] as string[],
    row:
      `| ${r.risk} | ${r.scope} | refused | ${r.effect === 'denied' ? 'any value: 503' : 'any value: ignored'} | ` +
      `${cell(r.reason)} |`,
  }));
  const rows = [...supported, ...refused]
    .sort((a, b) => (a.key < b.key ? -1 : 1))
    .map((r) => `| \`${r.key}\`${r.aliases.map((a) => ` (alias \`${a}\`)`).join('')} ${r.row}`);
  const configRows = [
    ...configKeys.map((k) => ({ key: k.key, row: `| supported | ${cell(k.doc)} |` })),
    ...refusedConfigKeys.map((k) => ({ key: k.key, row: `| refused: ignored | ${cell(k.reason)} |` })),
  ]
    .sort((a, b) => (a.key < b.key ? -1 : 1))
    .map((r) => `| \`${r.key}\` ${r.row}`);
  return [
    '# Compatibility with ingress-nginx',
    '',
    'Generated from `src/model/annotations/registry.ts` and `src/model/config-map/` (`npm run docs`);',
    'a test fails when this file is stale.',
    '',
    '## Annotations',
    '',
    `Every key takes the prefix \`${ANNOTATION_PREFIX}\`. Risk and scope are ingress-nginx's. A bad`,
    'annotation costs its feature, not the site: each one is a problem (and an Event) naming',
    '`namespace/name: metadata.annotations.<key>: message`, and the "invalid value" column says what',
    "it does, following ingress-nginx's parser for the key:",
    '',
    '- **ignored: default**: the key is ignored, its default applies, the Ingress is served',
    '  ("…; ignored, the default applies");',
    '- **fails closed: 503**: a security annotation that cannot be applied (auth-url that is not a URL,',
    '  auth-secret missing or malformed, a bad CIDR in a source range, an auth-tls Secret without a good CA)',
    "  makes every location of the Ingress answer 503, as ingress-nginx's denied locations do: they still",
    '  claim their paths (no other Ingress can take them over and skip the check) and proxy nothing; other',
    '  Ingresses on the same host are unharmed ("…; its locations answer 503");',
    '- **bad entries dropped**: a list keeps its valid entries and reports each bad one ("…; dropped, the',
    '  valid entries are kept"); CORS methods and headers left with no valid entry take the default, a',
    '  `cors-allow-origin` left with none allows no origin. A list bad as a whole (too long) is ignored.',
    '',
    'A value that could inject text into nginx.conf is such a bad value: it is never rendered. An annotation',
    "riskier than the ConfigMap's `annotations-risk-level` (default High, as ingress-nginx since 1.12: the",
    'Critical snippets need `Critical`) is reported and treated as invalid: snippets are ignored, as they',
    'are while `allow-snippet-annotations` is false, a security key fails closed, anything else is ignored.',
    'Refused annotations (status "refused") are reported whatever their value: a security feature fails',
    'closed ("any value: 503"), the rest are ignored; unknown keys under the prefix are reported and ignored.',
    'A canary Ingress (`canary: "true"`) with any invalid or refused annotation is left out as a whole, as',
    "before: a canary takes only its main Ingress's traffic, and a broken one should take none.",
    '',
    '| annotation | risk | scope | status | invalid value | notes |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    ...snippetDocs(),
    ...modsecurityDocs(),
    '## ConfigMap keys',
    '',
    'Defaults are in [configmap.md](configmap.md). Keys in neither list are reported as unknown and ignored.',
    '',
    '| key | status | notes |',
    '|---|---|---|',
    ...configRows,
    '',
  ].join('\n');
}
