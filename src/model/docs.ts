import { supportedKeys } from './annotations/registry.js';
import { refusedAnnotations } from './annotations/refused.js';
import { ANNOTATION_PREFIX } from './annotations/types.js';
import { configKeys, defaultGlobalConfig, refusedConfigKeys } from './config-map.js';
import {
  ALLOWED_DIRECTIVES,
  MODULE_PACKAGES,
  REFUSED_REASONS,
  SAFE_VARIABLES,
  SAFE_VARIABLE_PREFIXES,
} from './snippet-policy.js';

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
    'Generated from `src/model/config-map.ts` (`npm run docs`); a test fails when this file is stale.',
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

/** snippetDocs is the snippet allow-list section of docs/annotations.md, from src/model/snippet-policy.ts. */
function snippetDocs(): string[] {
  const rows = ALLOWED_DIRECTIVES.map((d) => {
    const notes = [
      d.once ? 'once per snippet' : '',
      d.annotation ? `not beside the annotation \`${d.annotation}\`` : '',
      d.module ? `needs ${MODULE_PACKAGES[d.module]}` : '',
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
    'and the directive, and the Ingress is left out.',
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

/**
 * annotationDocs is docs/annotations.md: the compatibility table, generated from the annotation
 * registry and the ConfigMap key registry so it cannot go stale.
 */
export function annotationDocs(): string {
  const supported = supportedKeys.map(({ group, key }) => ({
    key: key.key,
    aliases: key.aliases ?? [],
    row:
      `| ${key.risk} | ${key.scope} | ${key.support} | ` +
      `${cell(`${key.doc}${key.note ? `. Partial: ${key.note}` : ''}`)} (${group}) |`,
  }));
  const refused = refusedAnnotations.map((r) => ({
    key: r.key,
    aliases: [] as string[],
    row:
      `| ${r.risk} | ${r.scope} | ${r.effect === 'left-out' ? 'refused: Ingress left out' : 'refused: ignored'} | ` +
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
    'Generated from `src/model/annotations/registry.ts` and `src/model/config-map.ts` (`npm run docs`);',
    'a test fails when this file is stale.',
    '',
    '## Annotations',
    '',
    `Every key takes the prefix \`${ANNOTATION_PREFIX}\`. Risk and scope are ingress-nginx's. An invalid`,
    'value is a problem naming `namespace/name: metadata.annotations.<key>: message`, and that Ingress',
    "(only it) is left out. So is an Ingress with an annotation riskier than the ConfigMap's",
    '`annotations-risk-level` (default High, as ingress-nginx since 1.12: the Critical snippets need',
    '`Critical`), and one with a refused annotation whose absence could make serving unsafe or wrong',
    '("Ingress left out"). Other refused annotations, and unknown keys under the prefix, are reported',
    'and the Ingress is served without them.',
    '',
    '| annotation | risk | scope | status | notes |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    ...snippetDocs(),
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
