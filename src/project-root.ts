import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** PROJECT_ROOT is the folder with package.json and templates/, whether running from src/ or dist/src/. */
export const PROJECT_ROOT = basename(resolve(here, '..')) === 'dist' ? resolve(here, '../..') : resolve(here, '..');
