/**
 * lua/ingress_actors/schema.lua is generated from src/model/table-schema.ts: the two sides' bounds cannot drift.
 * UPDATE_SCHEMA=1 writes it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { luaSchema } from '../../src/model/table-schema.js';

const FILE = join(import.meta.dirname, '../../lua/ingress_actors/schema.lua');

test('schema.lua is what src/model/table-schema.ts generates', () => {
  if (process.env.UPDATE_SCHEMA) writeFileSync(FILE, luaSchema());
  expect(readFileSync(FILE, 'utf8')).toBe(luaSchema());
});
