/**
 * The WAF's memory floor (issue 32's ≤ 1.5× target): a bare nginx with one worker and one location with ModSecurity
 * on, its PSS once it has answered, as more of the WAF is loaded: nothing, Debian's module alone, the CRS as the
 * controller loads it (all of it), and two subsets the controller does not load (today) that show what a smaller rule
 * set would save: only the rules of paranoia level 1 (the default: the CRS skips the others unless a snippet raises
 * the level), and those without the application exclusion packages (Drupal, WordPress…, off unless a snippet turns
 * them on) and the response-body rules (not run with SecResponseBodyAccess Off, the default). The subsets are copies
 * of Debian's rule files with the skipped sections cut, beside copies of their data files.
 */
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CRS } from '../src/model/optional-modules.js';
import { get } from '../test/support/net.js';
import { startNginx, TEMP_PATHS } from './bare-nginx.js';
import { groupPssBytes } from './proc.js';

const MODULE = '/usr/lib/nginx/modules/ngx_http_modsecurity_module.so';
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** withinParanoiaLevel cuts a CRS 3 rule file's sections above `level` (from its `@lt level+1` skip to its end marker). */
function withinParanoiaLevel(text: string, level: number): string {
  const kept: string[] = [];
  let cutting = false;
  for (const line of text.split('\n')) {
    if (!cutting && line.includes(`EXECUTING_PARANOIA_LEVEL "@lt ${level + 1}"`)) cutting = true;
    if (cutting && line.startsWith('SecMarker')) cutting = false;
    if (!cutting) kept.push(line);
  }
  return kept.join('\n');
}

/** subset writes a copy of the CRS's rules (paranoia level 1; `lean`: without the exclusion packages and response rules). */
async function subset(dir: string, lean: boolean): Promise<string> {
  await mkdir(dir);
  for (const name of await readdir(CRS.rules)) {
    const from = join(CRS.rules, name);
    if (name.endsWith('.data')) await copyFile(from, join(dir, name));
    if (!name.endsWith('.conf')) continue;
    if (lean && (name.startsWith('REQUEST-903.9') || /^RESPONSE-95[0-4]/.test(name))) continue;
    await writeFile(join(dir, name), withinParanoiaLevel(await readFile(from, 'utf8'), 1));
  }
  return join(dir, '*.conf');
}

/** pssOf starts a bare nginx with `http` lines (and the module when `module`), asks it, and returns its PSS. */
async function pssOf(module: boolean, http: string[]): Promise<number> {
  const nginx = await startNginx(
    (port) => `${module ? `load_module ${MODULE};\n` : ''}worker_processes 1;
pid nginx.pid;
error_log error.log error;
events { worker_connections 256; }
http {
    ${TEMP_PATHS}
    access_log off;
${http.map((l) => `    ${l}\n`).join('')}    server {
        listen 127.0.0.1:${port};
        location / { ${module ? 'modsecurity on; ' : ''}return 200 "ok\\n"; }
    }
}
`,
  );
  try {
    for (let i = 0; i < 3; i++) await get({ host: 'floor', path: '/?q=1', port: nginx.port });
    await new Promise((r) => setTimeout(r, 300));
    return groupPssBytes(nginx.pid);
  } finally {
    await nginx.close();
  }
}

/** runWafFloor prints the bare nginx's PSS with more and more of the WAF loaded. */
export async function runWafFloor(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-bench-waf-floor-'));
  try {
    const base = ['modsecurity_rules "SecRuleEngine DetectionOnly";'];
    const crs = (rules: string) => [
      ...base,
      `modsecurity_rules_file ${CRS.setup};`,
      `modsecurity_rules "Include ${rules}";`,
    ];
    const rows: [string, boolean, string[]][] = [
      ['no module', false, []],
      ["Debian's module, no rules", true, base],
      ['the CRS, all of it (as the controller loads it)', true, crs(join(CRS.rules, '*.conf'))],
      ['the CRS, paranoia level 1 only', true, crs(await subset(join(dir, 'pl1'), false))],
      ['the same without exclusion packages and response rules', true, crs(await subset(join(dir, 'lean'), true))],
    ];
    const figures: string[] = [];
    let none = 0;
    for (const [name, module, http] of rows) {
      const pss = await pssOf(module, http);
      none ||= pss;
      figures.push(`${name} ${mb(pss)} MB (+${mb(pss - none)})`);
    }
    console.log(`bench waf floor: a bare nginx (1 worker, 1 location), PSS: ${figures.join('; ')}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
