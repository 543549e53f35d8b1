/**
 * What the worst request costs against the worst host the regex subset and the per-host budget accept (issue 27,
 * "a tenant's regex cannot stall others"). One controller-rendered nginx (one worker, pcre_jit on, the Lua router)
 * serves:
 * - `ingress.regex`: a use-regex Ingress whose paths fill the host's budget (MAX_REGEX_WEIGHT_PER_HOST) with one
 *   family of adversarial patterns the subset accepts; every request tries all of them (none matches);
 * - `gateway.regex`: HTTPRoutes whose matches each hold one RegularExpression header match on `x-q`, filling the
 *   budget the same way; every request walks all of them (none matches);
 * - `plain.regex`: an HTTPRoute with one PathPrefix rule, and `plain-ingress.regex`: an Ingress with one Prefix path,
 *   both to a stock nginx answering 200: the plain requests.
 * The adversarial subjects are as long as nginx takes (a URI or a header value of about 7,000 characters), made of
 * the characters the patterns repeat over, with the patterns' required characters present so PCRE2 cannot skip
 * the match by a quick scan. The figure is the nginx worker's CPU time per request (/proc/PID/schedstat), for
 * each family and subject, beside the plain requests' in the same run; the worst is printed last.
 */
import { mkdtemp } from 'node:fs/promises';
import { request, Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildModel } from '../src/model/build.js';
import { DynamicSplit } from '../src/sync/dynamic-split.js';
import { MAX_REGEX_WEIGHT_PER_HOST } from '../src/model/regex-budget.js';
import { type RegexAnchoring, regexSubsetRefusal, regexWeight } from '../src/model/regex-path.js';
import type { Snapshot } from '../src/model/snapshot.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { gateway, gatewayClass, listener, namespace, route } from '../test/gateway/fixtures.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../test/support/manifests.js';
import { freePort } from '../test/support/net.js';
import { cpuNs, dynamicOptions, startDynamic } from './gateway-routing.js';
import { startStaticNginx } from './bare-nginx.js';

const LENGTH = 7_000;
const PLAIN_REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2_000);
const HEAVY_REQUESTS = Number(process.env.BENCH_HEAVY_REQUESTS ?? 100);

/**
 * The adversarial families: `tag` makes the i-th pattern distinct without changing what it repeats over. Each has
 * loops over characters the subject is made of, and fails only at the subject's end.
 */
const FAMILIES: Record<string, (i: number) => string> = {
  // greedy run to the end, then back off one character at a time looking for x
  'any-then-x': (i) => `.*x(?:${i})?`,
  // ten loops alive at once, each backing off
  'ten-loops': (i) => `(?:.*0|.*1|.*2|.*3|.*4|.*5|.*6|.*7|.*8|.*9)x(?:${i})?`,
  // a loop after a loop of the same characters, parted by a separator the subject repeats
  segments: (i) => `(?:[a-z0-9]*/)*[a-z0-9]*x(?:${i})?`,
  // word runs and separators
  words: (i) => `(?:\\w+-)*\\w+\\.x(?:${i})?`,
};

/** SUBJECTS are the hostile inputs: what the families' loops repeat over, with the required characters in. */
const SUBJECTS: Record<string, string> = {
  letters: `x0${'a'.repeat(LENGTH)}`,
  digits: `x${'0123456789'.repeat(LENGTH / 10)}`,
  segments: `x${'a0/'.repeat(LENGTH / 3)}`,
  words: `x.${'ab-'.repeat(LENGTH / 3)}`,
};

/** fill gives the patterns of a family that fit the budget together, as the anchoring reads them. */
function fill(family: (i: number) => string, anchoring: RegexAnchoring, prefix: string): string[] {
  const patterns: string[] = [];
  let used = 0;
  for (let i = 0; ; i++) {
    // nginx runs an Ingress path as ^…: a final $ makes it read the whole URI, as the router's ^(?:…)$ does
    const p = `${prefix}${family(i)}${anchoring === 'start' ? '$' : ''}`;
    const refused = regexSubsetRefusal(p, anchoring);
    if (refused !== null) throw new Error(`${p} is refused: ${refused}`);
    const w = regexWeight(p, anchoring);
    if (used + w > MAX_REGEX_WEIGHT_PER_HOST) return patterns;
    used += w;
    patterns.push(p);
  }
}

const to = [{ name: 'bench', port: 80 }];

function snapshot(backendPort: number, family: (i: number) => string): { snapshot: Snapshot; counts: string } {
  const paths = fill(family, 'start', '/');
  const headers = fill(family, 'both', '');
  const matches = headers.map((value) => ({
    path: { type: 'PathPrefix', value: '/' },
    headers: [{ type: 'RegularExpression', name: 'x-q', value }],
  }));
  const routes: Record<string, unknown>[] = [];
  // 16 rules of at most 8 matches per route: the CRD's bounds
  for (let i = 0; i < matches.length; i += 128) {
    const mine = matches.slice(i, i + 128);
    const rules = Array.from({ length: Math.ceil(mine.length / 8) }, (_, r) => ({
      matches: mine.slice(r * 8, r * 8 + 8),
      backendRefs: to,
    }));
    routes.push(route(`hostile-${i}`, { hostnames: ['gateway.regex'], rules }));
  }
  const objects = [
    ingressClass(),
    ...serviceWithEndpoints('bench', [{ ip: '127.0.0.2', port: backendPort }]),
    ingress(
      'hostile',
      {
        'ingress.regex': paths.map((path) => ({ path, pathType: 'ImplementationSpecific' as const, service: 'bench' })),
      },
      { annotations: { 'nginx.ingress.kubernetes.io/use-regex': 'true' } },
    ),
    ingress('plain', { 'plain-ingress.regex': [{ path: '/', service: 'bench' }] }),
    {
      kind: 'ConfigMap',
      metadata: { namespace: 'ingress', name: 'config' },
      data: { 'disable-access-log': 'true', 'worker-processes': '1' },
    },
    gatewayClass(),
    gateway([listener('http')]),
    route('plain', { hostnames: ['plain.regex'], rules: [{ backendRefs: to }] }),
    ...routes,
    namespace('default'),
  ] as Record<string, unknown>[];
  return { snapshot: snapshotOf(objects), counts: `paths=${paths.length} header_matches=${headers.length}` };
}

interface Served {
  readonly port: number;
  readonly worker: number;
  close(): Promise<void>;
}

/** serve renders the config as the controller does for one family, runs nginx on it and pushes the tables. */
async function serve(backendPort: number, family: (i: number) => string): Promise<Served & { counts: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-bench-regex-host-'));
  const port = await freePort();
  const options = await dynamicOptions(dir, port);
  const built = snapshot(backendPort, family);
  const result = buildModel(built.snapshot, options);
  // every hostile regex must be served: a left-out one would measure less than the budget allows
  if (result.problems.length > 0) throw new Error(`bench objects refused: ${JSON.stringify(result.problems)}`);
  const { model, tables } = new DynamicSplit().split(result.model);
  const text = render(model, await loadTemplate());
  if (!text.includes('pcre_jit on;')) throw new Error('the template no longer turns pcre_jit on');
  const nginx = await startDynamic(dir, port, text, model.certificates, tables);
  return {
    port,
    worker: nginx.worker,
    counts: built.counts,
    close: nginx.close,
  };
}

interface Ask {
  readonly host: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
}

/** perRequest sends `count` requests one after another: the worker's CPU µs per request, and the statuses seen. */
async function perRequest(served: Served, ask: Ask, count: number): Promise<{ us: number; statuses: string }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const statuses = new Map<number, number>();
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: served.port, path: ask.path, agent, headers: { host: ask.host, ...ask.headers } },
        (res) => {
          statuses.set(res.statusCode ?? 0, (statuses.get(res.statusCode ?? 0) ?? 0) + 1);
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end();
    });
  await one(); // the worker compiles and caches the patterns on first use
  const before = cpuNs(served.worker);
  for (let i = 0; i < count; i++) await one();
  const us = (cpuNs(served.worker) - before) / count / 1_000;
  agent.destroy();
  return { us, statuses: [...statuses].map(([code, n]) => `${code}x${n}`).join(',') };
}

/** runRegexHost prints the worker CPU per request for each family and subject, beside the plain requests'. */
export async function runRegexHost(): Promise<void> {
  for (const refused of ['(a|aa)+', '/(a|aa)+$'])
    console.log(`bench regex-host: refused ${refused}: ${regexSubsetRefusal(refused, 'both')}`);
  const backend = await startStaticNginx();
  let worst = { us: 0, what: '' };
  let plainWorst = 0;
  try {
    for (const [name, family] of Object.entries(FAMILIES)) {
      const served = await serve(backend.port, family);
      try {
        const plain = await perRequest(served, { host: 'plain.regex', path: '/x' }, PLAIN_REQUESTS);
        const plainIngress = await perRequest(served, { host: 'plain-ingress.regex', path: '/x' }, PLAIN_REQUESTS);
        plainWorst = Math.max(plainWorst, plain.us, plainIngress.us);
        console.log(
          `bench regex-host: family=${name} ${served.counts} plain_gateway_us=${plain.us.toFixed(1)} ` +
            `(${plain.statuses}) plain_ingress_us=${plainIngress.us.toFixed(1)} (${plainIngress.statuses})`,
        );
        for (const [subjectName, subject] of Object.entries(SUBJECTS)) {
          const asks: [string, Ask][] = [
            ['ingress', { host: 'ingress.regex', path: `/${subject}` }],
            ['gateway', { host: 'gateway.regex', path: '/x', headers: { 'x-q': subject } }],
          ];
          for (const [kind, ask] of asks) {
            const r = await perRequest(served, ask, HEAVY_REQUESTS);
            const what = `${kind} family=${name} subject=${subjectName}`;
            if (r.us > worst.us) worst = { us: r.us, what };
            console.log(
              `bench regex-host: ${what} worker_us_per_request=${r.us.toFixed(1)} ` +
                `ratio_to_plain=${(r.us / Math.max(1, plain.us)).toFixed(1)} statuses=${r.statuses}`,
            );
          }
        }
      } finally {
        await served.close();
      }
    }
  } finally {
    await backend.close();
  }
  console.log(
    `bench regex-host: worst ${worst.what} worker_ms_per_request=${(worst.us / 1000).toFixed(2)} ` +
      `plain_ms_per_request=${(plainWorst / 1000).toFixed(3)} budget=${MAX_REGEX_WEIGHT_PER_HOST} subject_chars=${LENGTH}`,
  );
}
