/**
 * Regex paths cost CPU on every request (issue 14, finding 8): nginx tries each regex location of
 * the host in turn with PCRE2. This runs the config the controller renders for a use-regex
 * Ingress whose paths include the costliest kind the validator accepts (`/.*x(?:0)?$`: a run to the end,
 * then a step back per character looking for `x`; linear since issue 27 refused `/(a|aa)+$`, which backtracked
 * exponentially here; bench/regex-host.ts fills a whole host with such paths), twice, side by side:
 * as rendered (`pcre_jit on`) and with `pcre_jit off`. Each serves the same URIs through autocannon:
 * a plain one, a ReDoS-style one aimed at the nested quantifiers, and a long URI (4 KB).
 * The locations have no endpoints, so nginx answers 503 itself and the figure is nginx's own.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
import type { Snapshot } from '../src/model/snapshot.js';
import { nginxBinary } from '../src/nginx/binary.js';
import { writeConfigSet } from '../src/nginx/files.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { ingress, ingressClass } from '../test/support/manifests.js';
import { freePort, waitForPort } from '../test/support/net.js';

const HOST = 'regex.bench';
/** The paths of the bench Ingress; the last is the costliest kind checkRegexPath accepts. */
const PATHS = ['/api/v[0-9]+/items/[a-z0-9-]+', '/static/[^/]+\\.(css|js|png)$', '/.*x(?:0)?$'];
/** The request URIs: one every regex location reads quickly, one that runs the last path to the end and back, and a long one. */
const URIS: Record<string, string> = {
  plain: '/api/v2/items/abc-123',
  redos: `/x0${'a'.repeat(24)}!`,
  long: `/${'a'.repeat(4096)}!`,
};
const SECONDS = 2;
const ROUNDS = 3;
const CONNECTIONS = 8;

interface Nginx {
  readonly port: number;
  close(): Promise<void>;
}

/** startNginx writes the rendered config, with `pcre_jit` set as asked, and runs nginx on it. */
async function startNginx(jit: boolean): Promise<Nginx> {
  const dir = await mkdtemp(join(tmpdir(), `ia-bench-regex-${jit ? 'jit' : 'nojit'}-`));
  const port = await freePort();
  const snapshot = {
    ingressClasses: [ingressClass()],
    ingresses: [
      ingress(
        'regex',
        { [HOST]: PATHS.map((path) => ({ path, pathType: 'ImplementationSpecific' as const, service: 'none' })) },
        {
          annotations: { 'nginx.ingress.kubernetes.io/use-regex': 'true' },
        },
      ),
    ],
    services: [],
    endpointSlices: [],
    secrets: [],
    configMaps: [
      {
        metadata: { namespace: 'ingress', name: 'config' },
        data: { 'disable-access-log': 'true', 'worker-processes': '1' },
      },
    ],
  } as unknown as Snapshot;
  const { model, problems } = buildModel(snapshot, {
    ...defaultBuildOptions,
    configMap: 'ingress/config',
    httpPort: port,
    httpsPort: await freePort(),
  });
  const leftOut = problems.filter((p) => p.message.includes('left out'));
  if (leftOut.length > 0) throw new Error(`bench Ingress refused: ${JSON.stringify(leftOut)}`);
  const text = render(model, await loadTemplate());
  if (!text.includes('pcre_jit on;')) throw new Error('the template no longer turns pcre_jit on');
  const conf = await writeConfigSet(
    dir,
    jit ? text : text.replace('pcre_jit on;', 'pcre_jit off;'),
    model.certificates,
  );
  await writeFile(conf, (await readFile(conf, 'utf8')).replace(/^error_log .*$/m, 'error_log error.log crit;'));
  await new Promise<void>((resolve, reject) =>
    spawn(nginxBinary(), ['-p', `${dir}/`, '-c', conf, '-g', 'daemon on;'], { stdio: 'ignore' }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`nginx exited ${code}; see ${dir}/error.log`)),
    ),
  );
  await waitForPort(port);
  const pid = Number((await readFile(join(dir, 'nginx.pid'), 'utf8')).trim());
  return {
    port,
    close: async () => {
      process.kill(pid, 'SIGQUIT');
      await new Promise((r) => setTimeout(r, 300));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** rate is requests per second through nginx on `port` for `uri`, and the status codes seen. */
async function rate(port: number, uri: string): Promise<{ rps: number; statuses: string }> {
  const result = await new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      { url: `http://127.0.0.1:${port}${uri}`, headers: { host: HOST }, connections: CONNECTIONS, duration: SECONDS },
      (err, r) => (err ? reject(err) : resolve(r)),
    ),
  );
  const statuses = Object.entries(result.statusCodeStats ?? {})
    .map(([code, s]) => `${code}x${(s as { count: number }).count}`)
    .join(',');
  return { rps: result.requests.average, statuses };
}

/** runRegexPaths prints requests/s with pcre_jit on and off for each URI, and their ratio. */
export async function runRegexPaths(): Promise<void> {
  const on = await startNginx(true);
  const off = await startNginx(false);
  try {
    for (const [name, uri] of Object.entries(URIS)) {
      // Alternate rounds, so a burst of other work on the machine lands on both sides alike; take the median.
      const jit: Awaited<ReturnType<typeof rate>>[] = [];
      const nojit: typeof jit = [];
      for (let round = 0; round < ROUNDS; round++) {
        jit.push(await rate(on.port, uri));
        nojit.push(await rate(off.port, uri));
      }
      const median = (runs: typeof jit) => [...runs].sort((x, y) => x.rps - y.rps)[Math.floor(runs.length / 2)]!;
      const withJit = median(jit);
      const without = median(nojit);
      console.log(
        `bench regex-paths: uri=${name} (${uri.length} chars) jit_rps=${withJit.rps.toFixed(0)} nojit_rps=` +
          `${without.rps.toFixed(0)} ` +
          `ratio=${(withJit.rps / Math.max(1, without.rps)).toFixed(2)} statuses_jit=${withJit.statuses} ` +
          `statuses_nojit=${without.statuses}`,
      );
    }
  } finally {
    await on.close();
    await off.close();
  }
}
