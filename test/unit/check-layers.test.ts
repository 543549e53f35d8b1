/**
 * The layering the lint step enforces (`npm run lint`): biome.json's rules (no import cycle, type imports counted;
 * what src/model and machines/ may import; nothing imports src/cli/) run by the real biome on a planted tree, and
 * scripts/check-layers.ts (machines import the model as types only) on planted sources and on this repository.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkLayers, machineImportViolations } from '../../scripts/check-layers.js';
import { PROJECT_ROOT } from '../../src/project-root.js';

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** plant writes `files` (path → text) under a new temporary folder, with this repository's biome.json. */
function plant(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'ia-layers-'));
  made.push(root);
  copyFileSync(join(PROJECT_ROOT, 'biome.json'), join(root, 'biome.json'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

/** biomeFindings runs `biome lint` on `root` and lists `file rule` for every diagnostic. */
function biomeFindings(root: string): string[] {
  let output: string;
  try {
    output = execFileSync(join(PROJECT_ROOT, 'node_modules', '.bin', 'biome'), ['lint', '--colors=off', '.'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (error) {
    const failed = error as { stdout: string; stderr: string };
    output = failed.stdout + failed.stderr;
  }
  return [...output.matchAll(/^(\S+\.ts):\d+:\d+ (lint\/\S+)/gm)].map((m) => `${m[1]} ${m[2]}`).sort();
}

describe('biome.json layering rules', () => {
  it('fail on each planted violation and pass the clean files', () => {
    const root = plant({
      // a cycle through type imports only: the types must be a leaf
      'src/model/a.ts': "import type { B } from './b.js';\nexport interface A {\n  readonly b: B | null;\n}\n",
      'src/model/b.ts': "import type { A } from './a.js';\nexport interface B {\n  readonly a: A | null;\n}\n",
      // the model's types are a leaf: they import each other only, never a builder
      'src/model/nginx-model.ts':
        "import type { GatewayModel } from './gateway/model.js';\nexport type M = GatewayModel;\n",
      'src/model/gateway/model.ts':
        "import type { RouteTable } from '../pushed-tables.js';\nexport type G = RouteTable;\n",
      'src/model/pushed-tables.ts':
        "import type { Backend } from './dynamic-tables.js';\nexport type RouteTable = Backend;\n",
      'src/model/reads-disk.ts': "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;\n",
      'src/model/gateway/pushes.ts': "import { push } from '../../nginx/control.js';\nexport const p = push;\n",
      'src/model/watches.ts': "import { KubeConfig } from '@kubernetes/client-node';\nexport const k = KubeConfig;\n",
      'src/model/hashes.ts': "import { createHash } from 'node:crypto';\nexport const h = createHash;\n",
      'src/kube/flags.ts': "import { parseFlags } from '../cli/flags.js';\nexport const f = parseFlags;\n",
      'src/main.ts': "import { UsageError } from './cli/flags.js';\nexport const u = UsageError;\n",
      'src/kube/cluster.ts':
        "import { startApiServer } from '../dev/api-server/server.js';\nexport const s = startApiServer;\n",
      'src/dev/api-server/server.ts':
        "import { KubeConfig } from '@kubernetes/client-node';\nexport const startApiServer = KubeConfig;\n",
      'src/cli/main.ts': "import { parseFlags } from './flags.js';\nexport const f = parseFlags;\n",
      'machines/reads.machine.ts': "import { readFile } from 'node:fs/promises';\nexport const r = readFile;\n",
      'machines/runs.machine.ts': "import { execa } from 'execa';\nexport const e = execa;\n",
      'machines/clean.machine.ts':
        "import { setup } from 'xstate';\nimport type { A } from '../src/model/a.js';\n" +
        "import type { E } from './events.js';\nexport const m = setup;\nexport type X = A | E;\n",
    });
    expect(biomeFindings(root)).toEqual(
      [
        'src/model/a.ts lint/suspicious/noImportCycles',
        'src/model/b.ts lint/suspicious/noImportCycles',
        'src/model/pushed-tables.ts lint/style/noRestrictedImports',
        'src/model/reads-disk.ts lint/style/noRestrictedImports',
        'src/model/gateway/pushes.ts lint/style/noRestrictedImports',
        'src/model/watches.ts lint/style/noRestrictedImports',
        'src/kube/cluster.ts lint/style/noRestrictedImports',
        'src/kube/flags.ts lint/style/noRestrictedImports',
        'src/main.ts lint/style/noRestrictedImports',
        'machines/reads.machine.ts lint/style/noRestrictedImports',
        'machines/runs.machine.ts lint/style/noRestrictedImports',
      ].sort(),
    );
  });
});

describe('check-layers: machines import the model as types only', () => {
  it('accepts xstate, other machines and type imports from the model', () => {
    const source = [
      "import { assign, setup, type EventObject } from 'xstate';",
      "import type { NginxModel, Problem } from '../src/model/nginx-model.js';",
      'import type {',
      '  GatewayStatus,',
      "} from '../src/model/gateway/routes.js';",
      "import { statusMachine, type StatusInput } from './status.machine.js';",
      "export type { Problem } from '../src/model/nginx-model.js';",
    ].join('\n');
    expect(machineImportViolations('machines/a.machine.ts', source)).toEqual([]);
  });

  it('refuses value imports from the model, anything else from src/, other packages and dynamic imports', () => {
    const source = [
      "import { setup } from 'xstate';",
      "import { addChange } from '../src/model/trigger.js';",
      "import { type NginxModel } from '../src/model/nginx-model.js';",
      "export { summarizeTrigger } from '../src/model/trigger.js';",
      "import type { ControlStatus } from '../src/nginx/control.js';",
      "import { readFile } from 'node:fs/promises';",
      "import '../src/log.js';",
      "const later = () => import('../src/model/build.js');",
    ].join('\n');
    expect(machineImportViolations('machines/a.machine.ts', source).map((v) => `${v.line} ${v.specifier}`)).toEqual([
      '2 ../src/model/trigger.js',
      '3 ../src/model/nginx-model.js',
      '4 ../src/model/trigger.js',
      '5 ../src/nginx/control.js',
      '6 node:fs/promises',
      '7 ../src/log.js',
      '8 ../src/model/build.js',
    ]);
  });

  it('finds a planted violation in a tree, and none in this repository', () => {
    const root = plant({
      'machines/events.ts': "import type { Problem } from '../src/model/nginx-model.js';\nexport type E = Problem;\n",
      'machines/bad.machine.ts':
        "import { setup } from 'xstate';\nimport { buildModel } from '../src/model/build.js';\n",
    });
    expect(checkLayers(root).violations).toEqual([
      {
        file: 'machines/bad.machine.ts',
        line: 2,
        specifier: '../src/model/build.js',
        reason: 'a machine imports the model as types only (import type)',
      },
    ]);
    expect(checkLayers(PROJECT_ROOT).violations).toEqual([]);
  });
});
