/**
 * The reliability harness: a cluster (test API server, the controller in this process, a real
 * nginx), three backends, a steady request loop through nginx, the API changes faults race
 * against, the convergence check (live nginx.conf = render(buildModel(the API server's objects)),
 * applied by nginx, and the newest route answering), and the ledger of faults that the reporter
 * sums up into `reliability: N faults, N survived, N requests, N lost`.
 */
import { X509Certificate } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { loadTemplate, DEFAULT_TEMPLATE } from '../../src/render/load.js';
import type { NginxTemplate } from '../../src/render/render.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { queueIdle, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import type { DynamicTables } from '../../src/model/pushed-tables.js';
import { expectedState, withoutKeptProfiles } from './expected.js';
import type { knownBugs } from './known-bugs.js';
import { profile } from './profile.js';
import { addRefusalHook } from '../support/refusal-hook.js';
import { writeNginxWrapper } from './nginx-wrapper.js';
import { mountTmpfs, type Tmpfs } from './tmpfs.js';
import { Traffic, type Failure } from './traffic.js';

/** FaultRecord is one injected fault and what became of it. */
export interface FaultRecord {
  readonly kind: string;
  /** converged within its bound, no request lost meanwhile, the controller still running */
  readonly survived: boolean;
  /** from the end of the fault to convergence; null when it did not converge */
  readonly convergeMs: number | null;
  readonly lost: number;
  readonly knownBug?: string;
  /** why it did not survive, or what else was seen */
  readonly detail?: string;
}

/** Results is what one test file leaves for the reporter. */
export interface Results {
  readonly file: string;
  readonly profile: string;
  readonly faults: readonly FaultRecord[];
  readonly skipped: readonly { kind: string; reason: string }[];
  readonly notes: readonly string[];
  /** known bugs seen outside the fault ledger (checks, bad-input hits) */
  readonly knownBugsSeen: readonly string[];
  readonly requests: number;
  readonly lost: number;
  readonly lostSample: readonly Failure[];
  readonly refusedWhileDown: number;
  /** how long nginx was down, per down window (kill -9 to a new master serving) */
  readonly downMs: readonly number[];
  readonly childRestarts: Readonly<Record<string, number>>;
}

/** HarnessOptions choose what a test file's cluster is made of. */
export interface HarnessOptions {
  /** the name of the results file */
  readonly name: string;
  /** objects beyond the standard ones (class, three Services, steady, churn and TLS Ingresses) */
  readonly seed?: readonly object[];
  readonly flags?: readonly string[];
  /** put the config folder on a small tmpfs (for the disk-full fault) when mounting one is allowed */
  readonly tmpfsMb?: number;
  /** run nginx through a wrapper whose `nginx -t` fails while `nginxTestFault(true)` */
  readonly wrapNginx?: boolean;
  /** a private copy of templates/, so a test can break it */
  readonly copyTemplate?: boolean;
  /**
   * `lua` (the default flags): endpoints and host certificates pushed to the Lua balancer, and checked as pushed;
   * `rendered` (`--dynamic-backends=false`): both in nginx.conf, where nginx -t judges them
   */
  readonly mode?: 'lua' | 'rendered';
}

/** STEADY are the routes the request loop asks for during the whole run; no fault changes them. */
export const STEADY = [
  { host: 'steady-a.example.com', path: '/', backend: 'a' },
  { host: 'steady-b.example.com', path: '/api/x', backend: 'b' },
] as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const INGRESSES = findResourceByKind('networking.k8s.io/v1', 'Ingress')!;
const SECRETS = findResourceByKind('v1', 'Secret')!;

function firstDifference(live: string, expected: string): string {
  const a = live.split('\n');
  const b = expected.split('\n');
  const i = a.findIndex((line, k) => line !== b[k]);
  const at = i === -1 ? Math.min(a.length, b.length) : i;
  return `line ${at + 1}: live ${JSON.stringify(a[at] ?? '<end>')}, expected ${JSON.stringify(b[at] ?? '<end>')}`;
}

/** Harness is one test file's cluster, traffic and ledger. */
export class Harness {
  readonly records: FaultRecord[] = [];
  readonly skipped: { kind: string; reason: string }[] = [];
  readonly notes: string[] = [];
  readonly knownBugsSeen = new Set<string>();
  /** the template the controller should be rendering with: its last good one */
  template!: NginxTemplate;
  /** the newest churn route: the API's latest change, which a converged nginx answers */
  churn = { path: '/v0', backend: 'a' };
  /** TLS hosts and their Secrets (default namespace): a converged nginx serves the Secret's certificate */
  readonly tlsHosts = new Map<string, string>([['secure.example.com', 'secure-tls']]);
  private churnCount = 0;
  /**
   * Ingresses (`namespace/name`) the controller has left out because nginx refused them: the expected config is built
   * without them
   */
  readonly excluded = new Set<string>();

  private constructor(
    readonly options: HarnessOptions,
    readonly cluster: Cluster,
    readonly traffic: Traffic,
    readonly backends: readonly Backend[],
    readonly scratch: string,
    readonly tmpfs: Tmpfs | null,
    readonly templateFile: string,
    private readonly nginxFaultFile: string | null,
  ) {}

  /** start brings up backends, the cluster (nginx serving the steady routes), and the request loop. */
  static async start(options: HarnessOptions): Promise<Harness> {
    const scratch = await mkdtemp(join(tmpdir(), 'ia-reliability-'));
    const skipped: { kind: string; reason: string }[] = [];
    const backends = [await startBackend('a'), await startBackend('b'), await startBackend('c')];
    const [a, b, c] = backends as [Backend, Backend, Backend];
    const leaf = await issueCertificate({ commonName: 'secure.example.com', dnsNames: ['secure.example.com'] });
    const seed = [
      ingressClass(),
      ...serviceWithEndpoints('a', [{ port: a.port }]),
      ...serviceWithEndpoints('b', [{ port: b.port }]),
      ...serviceWithEndpoints('c', [{ port: c.port }]),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'default', name: 'ingress-config' }, data: {} },
      tlsSecret('secure-tls', leaf.certPem, leaf.keyPem),
      ingress('steady-a', { [STEADY[0].host]: [{ path: '/', service: 'a' }] }),
      ingress('steady-b', { [STEADY[1].host]: [{ path: '/api', service: 'b' }] }),
      ingress(
        'secure',
        { 'secure.example.com': [{ path: '/', service: 'c' }] },
        { tls: [{ hosts: ['secure.example.com'], secretName: 'secure-tls' }] },
      ),
      ingress('churn', { 'churn.example.com': [{ path: '/v0', service: 'a' }] }),
      ...(options.seed ?? []),
    ];
    const mode = options.mode ?? 'lua';
    const flags: string[] = ['--configmap', 'default/ingress-config'];
    if (mode === 'rendered') flags.push('--dynamic-backends=false');
    let tmpfs: Tmpfs | null = null;
    if (options.tmpfsMb) {
      const mounted = await mountTmpfs(options.tmpfsMb);
      if ('reason' in mounted) skipped.push({ kind: 'disk full', reason: mounted.reason });
      else {
        tmpfs = mounted;
        flags.push('--config-dir', join(tmpfs.dir, 'nginx'));
      }
    }
    let templateFile = DEFAULT_TEMPLATE;
    if (options.copyTemplate) {
      await cp(dirname(DEFAULT_TEMPLATE), join(scratch, 'templates'), { recursive: true });
      templateFile = join(scratch, 'templates', 'nginx.conf.hbs');
      await addRefusalHook(templateFile);
      flags.push('--template', templateFile);
    }
    let nginxFaultFile: string | null = null;
    if (options.wrapNginx) {
      nginxFaultFile = join(scratch, 'nginx-t-fails');
      flags.push('--nginx-binary', await writeNginxWrapper(scratch, nginxFaultFile));
    }
    const cluster = await startCluster(seed, [...flags, ...(options.flags ?? [])]);
    try {
      return await Harness.settle(options, cluster, backends, scratch, tmpfs, templateFile, nginxFaultFile, skipped);
    } catch (error) {
      // No harness to close: stop what was started, or its nginx outlives the run, listening on its ports.
      await cluster.close();
      await Promise.all(backends.map((b) => b.close()));
      await tmpfs?.unmount();
      await rm(scratch, { recursive: true, force: true });
      throw error;
    }
  }

  /** settle makes the harness on a started cluster and waits until it serves the steady routes and converged. */
  private static async settle(
    options: HarnessOptions,
    cluster: Cluster,
    backends: Backend[],
    scratch: string,
    tmpfs: Tmpfs | null,
    templateFile: string,
    nginxFaultFile: string | null,
    skipped: { kind: string; reason: string }[],
  ): Promise<Harness> {
    const mode = options.mode ?? 'lua';
    // The expected config is built with the controller's own build options; lua mode must have found the balancer.
    if (mode === 'lua' && !cluster.controller.build.dynamic)
      throw new Error('lua mode, but the controller found no Lua balancer');
    const traffic = new Traffic(cluster.httpPort, STEADY);
    const harness = new Harness(options, cluster, traffic, backends, scratch, tmpfs, templateFile, nginxFaultFile);
    harness.skipped.push(...skipped);
    harness.template = await loadTemplate(templateFile);
    await waitFor(
      'the steady routes served',
      async () => {
        for (const t of STEADY)
          if ((await get({ host: t.host, path: t.path, port: cluster.httpPort })).backend !== t.backend) return false;
        return true;
      },
      20_000,
    );
    const first = await harness.waitConverged(20_000);
    if (typeof first === 'string') throw new Error(`the controller did not converge at start: ${first}`);
    traffic.start();
    return harness;
  }

  /** conf is the live nginx.conf's path. */
  get conf(): string {
    return join(this.cluster.config.configDir, 'nginx.conf');
  }

  expected(): string {
    return this.expectedState().config;
  }

  expectedState(): { config: string; tables: DynamicTables | null; profiles: ReadonlySet<string> | null } {
    return expectedState(
      this.cluster.api,
      this.cluster.config,
      this.template,
      this.cluster.controller.build,
      this.excluded,
    );
  }

  nginxContext(): {
    pid: number | null;
    reloadsOk: number;
    reloadsFailed: number;
    lastReloadError: string | null;
    applied: { config: string } | null;
    restarts: number;
  } {
    return this.cluster.actor('nginx')!.context as never;
  }

  nginxState(): string {
    return JSON.stringify(this.cluster.actor('nginx')?.value);
  }

  rootActive(): boolean {
    return this.cluster.controller.root.getSnapshot().status === 'active';
  }

  childRestarts(): Record<string, number> {
    return (this.cluster.controller.root.getSnapshot().context as { restarts?: Record<string, number> }).restarts ?? {};
  }

  /** notConverged says why the controller is not (yet) where the API state says, or null when it is. */
  async notConverged(): Promise<string | null> {
    if (!this.rootActive()) return `the root supervisor is ${this.cluster.controller.root.getSnapshot().status}`;
    if (this.nginxState() !== '{"alive":"running"}') return `nginx is ${this.nginxState()}`;
    const queue = this.cluster.actor('syncQueue');
    if (!queueIdle(queue?.value))
      return `the sync queue is ${JSON.stringify(queue?.value)} (last error: ${String(queue?.context.lastError)})`;
    const { config: expected, tables, profiles } = this.expectedState();
    const written = await readFile(this.conf, 'utf8');
    const live = profiles ? withoutKeptProfiles(written, expected, profiles) : written;
    if (live !== expected) {
      const n = this.nginxContext();
      return (
        `live nginx.conf differs from render(buildModel(API objects)) at ${firstDifference(live, expected)}; ` +
        `last reload error: ${String(n.lastReloadError).split('\n')[0]}`
      );
    }
    if (this.nginxContext().applied?.config !== written) return 'nginx.conf is written but nginx has not applied it';
    if (tables) {
      // every endpoint and host certificate nginx serves came through the push, as the model built them
      const context = this.cluster.actor('nginx')?.context as { pushed?: DynamicTables | null } | undefined;
      const pushed = context?.pushed;
      for (const table of ['backends', 'certificates'] as const)
        if (pushed?.[table].version !== tables[table].version)
          return `nginx holds ${table} ${pushed?.[table].version ?? 'none'}, the API state makes ${tables[table].version}`;
    }
    const reply = await get({ host: 'churn.example.com', path: this.churn.path, port: this.cluster.httpPort });
    if (reply.backend !== this.churn.backend)
      return (
        `the newest route ${this.churn.path} answers ${reply.status}` +
        ` from ${reply.backend ?? 'nginx'}, not ${this.churn.backend}`
      );
    for (const [host, secret] of this.tlsHosts) {
      const served = await this.servedCertificate(host);
      const wanted = this.apiCertificate(secret);
      if (served !== wanted)
        return `${host} is served with certificate ${served}, its Secret ${secret} holds ${wanted}`;
    }
    return null;
  }

  /** servedCertificate is the SHA-256 fingerprint of the certificate nginx presents for `host`. */
  async servedCertificate(host: string): Promise<string | undefined> {
    return (await get({ host, path: '/', port: this.cluster.httpsPort, https: true })).peerCertificate?.fingerprint256;
  }

  /**
   * apiCertificate is the SHA-256 fingerprint of the certificate in a default-namespace TLS Secret of the API server.
   */
  apiCertificate(secret: string): string | undefined {
    const object = this.cluster.api.registry.store.get(SECRETS, 'default', secret) as
      | { data?: Record<string, string> }
      | undefined;
    const pem = object?.data?.['tls.crt'];
    return pem ? new X509Certificate(Buffer.from(pem, 'base64')).fingerprint256 : undefined;
  }

  /** waitConverged polls notConverged: the milliseconds it took, or the last reason after timeoutMs. */
  async waitConverged(timeoutMs: number): Promise<number | string> {
    const started = Date.now();
    let reason: string | null = 'not checked';
    while (Date.now() - started <= timeoutMs) {
      reason = await this.notConverged().catch((error: Error) => `check failed: ${error.message}`);
      if (reason === null) return Date.now() - started;
      await sleep(25);
    }
    return reason ?? 'timed out';
  }

  /** begin marks the start of a fault; `end` waits for convergence and records it. */
  begin(kind: string, knownBug?: keyof typeof knownBugs): Fault {
    return new Fault(this, kind, knownBug);
  }

  /**
   * change moves the API state: the churn Ingress gets a new path on the next backend, and every
   * other change an extra Ingress appears or goes. `registry` writes on the server side (while
   * no client could), `client` through client-node.
   */
  async change(via: 'client' | 'registry', needs: 'push' | 'reload' = 'push'): Promise<void> {
    const n = ++this.churnCount;
    const backend = ['a', 'b', 'c'][n % 3]!;
    // routes as data: a path and backend change is pushed; a setting no path had before makes a new location profile,
    // so nginx.conf changes and nginx reloads
    const annotations: Record<string, string> =
      needs === 'reload' ? { 'nginx.ingress.kubernetes.io/proxy-read-timeout': String(1000 + n) } : {};
    const churn = ingress('churn', { 'churn.example.com': [{ path: `/v${n}`, service: backend }] }, { annotations });
    if (via === 'registry') this.cluster.api.registry.apply(churn as never);
    else await this.cluster.apply(churn);
    this.churn = { path: `/v${n}`, backend };
    if (n % 2 === 0) {
      const name = `extra-${(n / 2) % 4}`;
      const extra = ingress(name, { [`${name}.example.com`]: [{ path: '/', service: backend }] });
      const exists = this.cluster.api.registry.store.get(INGRESSES, 'default', name) !== undefined;
      if (via === 'registry') {
        if (exists) this.cluster.api.registry.delete(INGRESSES, 'default', name);
        else this.cluster.api.registry.apply(extra as never);
      } else if (exists) await this.cluster.remove(extra);
      else await this.cluster.apply(extra);
    }
  }

  /** nginxTestFault makes the wrapper's `nginx -t` fail (true) or pass (false). */
  async nginxTestFault(on: boolean): Promise<void> {
    if (!this.nginxFaultFile) throw new Error('start the harness with wrapNginx');
    if (on) await writeFile(this.nginxFaultFile, '');
    else await rm(this.nginxFaultFile, { force: true });
  }

  /** results is this file's part of the suite's tally. */
  results(): Results {
    const lost = this.traffic.lost();
    return {
      file: this.options.name,
      profile: profile.name,
      faults: this.records,
      skipped: this.skipped,
      notes: this.notes,
      knownBugsSeen: [...this.knownBugsSeen],
      requests: this.traffic.requests,
      lost: lost.length,
      lostSample: lost.slice(0, 5),
      refusedWhileDown: this.traffic.refusedWhileDown(),
      downMs: this.traffic.downMs(),
      childRestarts: this.childRestarts(),
    };
  }

  /** close stops the traffic and the cluster, writes the results, and removes what it made. */
  async close(): Promise<void> {
    await this.traffic.stop();
    const results = this.results();
    const dir = process.env.RELIABILITY_RESULTS;
    if (dir) {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, `${this.options.name}.json`), JSON.stringify(results, null, 2));
    }
    await this.cluster.close();
    await Promise.all(this.backends.map((b) => b.close()));
    await this.tmpfs?.unmount();
    await rm(this.scratch, { recursive: true, force: true });
  }

  /**
   * knownBugCheck is a check outside the fault ledger that a known bug makes fail: a failure is
   * noted (and fails only with RELIABILITY_STRICT=1); a pass fails the test, so that the entry in
   * known-bugs.ts is removed.
   */
  knownBugCheck(bug: keyof typeof knownBugs, what: string, failure: string | null): void {
    if (failure !== null) {
      this.notes.push(`${what}: fails (known bug ${bug}): ${failure}`);
      this.knownBugsSeen.add(bug);
    }
    if (process.env.RELIABILITY_STRICT === '1') expect(failure, what).toBeNull();
    else
      expect(
        failure === null ? `${what} passes, so known bug "${bug}" looks fixed; remove it from known-bugs.ts` : null,
      ).toBeNull();
  }

  /**
   * expectSurvived fails the test for every fault that was not survived, unless it is a known
   * bug (set RELIABILITY_STRICT=1 to fail on those too), and for every known bug that no longer
   * shows (so the list in known-bugs.ts stays true).
   */
  expectSurvived(records: readonly FaultRecord[] = this.records): void {
    const strict = process.env.RELIABILITY_STRICT === '1';
    const failed = records
      .filter((r) => !r.survived && (strict || !r.knownBug))
      .map((r) => `${r.kind}: ${r.detail ?? 'not survived'}`);
    const fixed = records
      .filter((r) => r.survived && r.knownBug)
      .map((r) => `${r.kind}: survived, so known bug "${r.knownBug}" looks fixed; remove it from known-bugs.ts`);
    expect([...failed, ...fixed]).toEqual([]);
  }
}

/** Fault is one injected fault between `begin` and `end`. */
export class Fault {
  readonly start = Date.now();

  constructor(
    private readonly harness: Harness,
    readonly kind: string,
    readonly knownBug?: keyof typeof knownBugs,
  ) {}

  /**
   * end is called once the fault is over (the API server answers again, the disk has room, …):
   * it waits up to timeoutMs for convergence, counts the requests lost since `begin`, and records
   * the outcome. `failure` is something the test saw that already means not survived (orphans
   * left, a config swapped in that should not have been); `detail` is anything else worth keeping;
   * `knownBug` names the known bug that explains a failure seen only now (from nginx's words, say).
   */
  async end(
    timeoutMs: number,
    seen: { failure?: string; detail?: string; knownBug?: keyof typeof knownBugs } = {},
  ): Promise<FaultRecord> {
    const h = this.harness;
    const { failure, detail } = seen;
    const knownBug = seen.knownBug ?? this.knownBug;
    const converged = await h.waitConverged(timeoutMs);
    // The loop's requests in flight at convergence belong to this fault too.
    await h.traffic.settled(STEADY.length).catch(() => undefined);
    const lost = h.traffic.lost(this.start);
    const alive = h.rootActive();
    const reasons = [
      ...(typeof converged === 'string' ? [`did not converge within ${timeoutMs} ms: ${converged}`] : []),
      ...(lost.length > 0 ? [`${lost.length} requests lost, e.g. ${lost[0]!.target}: ${lost[0]!.reason}`] : []),
      ...(alive ? [] : ['the controller stopped']),
      ...(failure ? [failure] : []),
    ];
    const record: FaultRecord = {
      kind: this.kind,
      survived: reasons.length === 0,
      convergeMs: typeof converged === 'number' ? converged : null,
      lost: lost.length,
      ...(knownBug ? { knownBug } : {}),
      ...(reasons.length > 0 || detail ? { detail: [...reasons, ...(detail ? [detail] : [])].join('; ') } : {}),
    };
    h.records.push(record);
    return record;
  }
}
