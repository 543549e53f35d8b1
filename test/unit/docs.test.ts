import { readFile, writeFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { supportedKeys } from '../../src/model/annotations/registry.js';
import { refusedAnnotations } from '../../src/model/annotations/refused.js';
import { configKeys } from '../../src/model/config-map/registry.js';
import { annotationDocs, configMapDocs } from '../../src/model/docs.js';
import { convertRules } from '../../src/convert/annotations.js';
import { convertDocs } from '../../src/convert/docs.js';

const FILE = new URL('../../docs/configmap.md', import.meta.url);
const ANNOTATIONS = new URL('../../docs/annotations.md', import.meta.url);
const CONVERT = new URL('../../docs/convert.md', import.meta.url);

it('docs/configmap.md is generated from the key registry and up to date', async () => {
  if (process.env.UPDATE_DOCS) await writeFile(FILE, configMapDocs());
  const text = await readFile(FILE, 'utf8');
  expect(text).toBe(configMapDocs());
  for (const key of configKeys) expect(text).toContain(`| \`${key.key}\` |`);
  expect(text).not.toContain('| `undefined`');
});

it('docs/annotations.md is generated from the annotation registry and up to date', async () => {
  if (process.env.UPDATE_DOCS) await writeFile(ANNOTATIONS, annotationDocs());
  const text = await readFile(ANNOTATIONS, 'utf8');
  expect(text).toBe(annotationDocs());
  for (const { key } of supportedKeys) expect(text).toContain(`| \`${key.key}\``);
  for (const key of refusedAnnotations) expect(text).toContain(`| \`${key.key}\``);
  for (const key of configKeys) expect(text).toContain(`| \`${key.key}\` | supported |`);
  expect(text).not.toContain('undefined');
});

it('docs/convert.md is generated from the convert verdict table and up to date', async () => {
  if (process.env.UPDATE_DOCS) await writeFile(CONVERT, convertDocs());
  const text = await readFile(CONVERT, 'utf8');
  expect(text).toBe(convertDocs());
  // Every annotation the controller knows, supported or refused, has a verdict there.
  for (const { key } of supportedKeys) expect(text).toContain(`| \`${key.key}\` |`);
  for (const key of refusedAnnotations) expect(text).toContain(`| \`${key.key}\` |`);
  for (const rule of convertRules()) expect(rule.verdict === 'converted' || rule.reason !== '').toBe(true);
  expect(text).not.toContain('undefined');
});

it('lists no annotation twice', () => {
  const names = [
    ...supportedKeys.flatMap(({ key }) => [key.key, ...(key.aliases ?? [])]),
    ...refusedAnnotations.map((r) => r.key),
  ];
  expect(new Set(names).size).toBe(names.length);
});
