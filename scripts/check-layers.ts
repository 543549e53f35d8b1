/**
 * check-layers: the one layering rule biome cannot say. biome.json says the rest (no import cycle, type imports
 * counted; what src/model and machines/ may import; nothing imports src/cli/), but its restricted imports cannot tell
 * `import type` from a value import. Machines are pure: they may import xstate, each other, and the model's *types*
 * only, so a machine never runs model code (that is an effect's job, provided by src/). Run by `npm run lint`
 * (`node scripts/check-layers.ts`, Node's type stripping, no dependencies); test/unit/check-layers.test.ts plants
 * violations.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** LayerViolation is one import a machine may not have. */
export interface LayerViolation {
  /** the file, relative to the checked root, with `/` */
  readonly file: string;
  readonly line: number;
  readonly specifier: string;
  readonly reason: string;
}

/** An import or re-export with `from`, a side-effect import, or a dynamic import(). */
const IMPORT =
  /(?:^|[;\n}])\s*(import|export)(\s+type)?\s+(?:[\w*{][^;'"]*?\s+from\s*)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/**
 * machineImportViolations lists what `source` (the text of `file`, a path relative to the root with `/`, under
 * machines/) imports that a machine may not: anything but `xstate`, another machines/ module, or `import type` /
 * `export type` from src/model/.
 */
export function machineImportViolations(file: string, source: string): LayerViolation[] {
  const violations: LayerViolation[] = [];
  for (const match of source.matchAll(IMPORT)) {
    const dynamic = match[4] !== undefined;
    const specifier = (match[3] ?? match[4]) as string;
    const typeOnly = !dynamic && match[2] !== undefined;
    const line = source.slice(0, match.index + match[0].length).split('\n').length;
    const reason = machineImportProblem(file, specifier, typeOnly, dynamic);
    if (reason !== null) violations.push({ file, line, specifier, reason });
  }
  return violations;
}

function machineImportProblem(file: string, specifier: string, typeOnly: boolean, dynamic: boolean): string | null {
  if (dynamic) return 'a machine imports nothing at run time (dynamic import)';
  if (specifier === 'xstate') return null;
  if (!specifier.startsWith('.')) return `a machine imports only xstate, not ${specifier}`;
  const target = join(dirname(file), specifier).split(sep).join('/');
  if (target.startsWith('machines/')) return null;
  if (target.startsWith('src/model/')) {
    return typeOnly ? null : 'a machine imports the model as types only (import type)';
  }
  return `a machine imports only xstate, other machines and model types, not ${target}`;
}

/** checkLayers checks every .ts file under `root`/machines/. */
export function checkLayers(root: string): { violations: LayerViolation[] } {
  const dir = join(root, 'machines');
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => relative(root, join(dir, name)).split(sep).join('/'))
    .sort();
  return {
    violations: files.flatMap((file) => machineImportViolations(file, readFileSync(join(root, file), 'utf8'))),
  };
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const { violations } = checkLayers(root);
  for (const v of violations) console.error(`${v.file}:${v.line}: ${v.specifier}: ${v.reason}`);
  if (violations.length > 0) process.exit(1);
  console.log(`check-layers: machines/ import only xstate, each other and model types`);
}
