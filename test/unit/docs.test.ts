import { readFile, writeFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { configKeys } from '../../src/model/config-map.js';
import { configMapDocs } from '../../src/model/docs.js';

const FILE = new URL('../../docs/configmap.md', import.meta.url);

it('docs/configmap.md is generated from the key registry and up to date', async () => {
  if (process.env.UPDATE_DOCS) await writeFile(FILE, configMapDocs());
  const text = await readFile(FILE, 'utf8');
  expect(text).toBe(configMapDocs());
  for (const key of configKeys) expect(text).toContain(`| \`${key.key}\` |`);
  expect(text).not.toContain('| `undefined`');
});
