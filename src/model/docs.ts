import { configKeys, defaultGlobalConfig } from './config-map.js';

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
    'Keys and defaults are ingress-nginx\'s. A bad value is reported as a problem naming the key, and',
    'the default stays; an unknown key is reported and ignored.',
    '',
    '| key | nginx / meaning | default |',
    '|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
