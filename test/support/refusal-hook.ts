/**
 * A config nginx -t refuses on demand, for the tests of what the controller does then. Every ConfigMap value that
 * passes its validator renders a config nginx accepts (test/nginx/config-map-values.test.ts), so the refusal comes
 * from a test's copy of the template: a directive nginx does not know, written while `server-tokens` is "true".
 */
import { readFile, writeFile } from 'node:fs/promises';

/** REFUSAL is the ConfigMap data that makes the hooked template refused, and what nginx -t then says. */
export const REFUSAL = {
  on: { 'server-tokens': 'true' },
  off: { 'server-tokens': null },
  error: /unknown directive "test_refused_by_nginx"/,
} as const;

/** addRefusalHook edits a copied template so that REFUSAL.on makes nginx -t refuse it (at the http level: nobody's). */
export async function addRefusalHook(templateFile: string): Promise<void> {
  const text = await readFile(templateFile, 'utf8');
  const hooked = text.replace(
    /^http \{\n/m,
    'http {\n{{#if config.showServerTokens}}\n    test_refused_by_nginx on;\n{{/if}}\n',
  );
  if (hooked === text) throw new Error(`${templateFile}: no http block to hook`);
  await writeFile(templateFile, hooked);
}
