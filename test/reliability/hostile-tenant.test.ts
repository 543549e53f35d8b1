/**
 * A hostile tenant (issue 14): while request loops run against nine good tenants (and the
 * harness's steady routes), a tenth applies, one after another, every value that used to stall,
 * block or bypass the controller: a ReDoS-shaped upstream-hash-by, values nginx refuses (regex
 * paths, sizes, a certificate OpenSSL will not load), client-chosen auth servers, and snippets
 * that reached other tenants. After each: /healthz answered within 1 s throughout, the good
 * tenants' next changes are served within the usual time, no good request was lost, and the
 * controller converges to the API state without the bad Ingress where it left it out because
 * nginx refused it (its Event says so), or with it where a validator refused its value.
 *
 * Issue 27 adds the push path's entries (Lua mode): entries at the pushed tables' bounds, a key nginx's OpenSSL cannot
 * read, one large Secret named by 120 TLS hosts, regexes that backtrack, and a backend that answers every status to
 * odd methods while it is flooded with requests. Each costs its tenant at most: the good tenants are served and
 * /healthz answers 200 within 1 s throughout; where nothing about the objects is wrong (the bounds, the large
 * Secret) the bad tenant is served too and gets no Event.
 *
 * Every value with the Lua balancer (the default: endpoints and certificates pushed); the certificate
 * OpenSSL refuses also with rendered certificates (`--dynamic-backends=false`), where nginx -t refuses it
 * and the quarantine leaves the Ingress out, while with the Lua balancer a validator refuses the key.
 */
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedNames } from '../../src/model/dynamic-tables.js';
import type { CertificateTable } from '../../src/model/pushed-tables.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { waitFor } from '../support/cluster.js';
import { ingress, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { mlDsaCertificate } from '../support/ml-dsa-certificate.js';
import { get } from '../support/net.js';
import { weakCertificate } from '../support/weak-certificate.js';
import { Harness } from './harness.js';
import { Traffic } from './traffic.js';

const GOOD = 9;
const tenant = (i: number) => `tenant-${i}`;
const BAD_NS = 'tenant-bad';
/** Each hostile value comes in an Ingress of its own (Events are rate-limited per Ingress). */
const badHost = (name: string) => `${name}.example.com`;
const A = 'nginx.ingress.kubernetes.io/';

let h: Harness;
let tenants: Traffic;
let round = 0;

function goodIngress(i: number) {
  return ingress(
    'site',
    {
      [`t${i}.example.com`]: [
        { path: '/', service: 'web' },
        { path: `/r${round}`, service: 'web' },
      ],
    },
    { namespace: tenant(i) },
  );
}

function badIngress(
  name: string,
  extra: { annotations?: Record<string, string>; path?: string; regex?: boolean; tls?: boolean } = {},
) {
  const made = ingress(
    name,
    {
      [badHost(name)]: [
        { path: extra.path ?? '/', pathType: extra.regex ? 'ImplementationSpecific' : 'Prefix', service: 'web' },
      ],
    },
    {
      namespace: BAD_NS,
      annotations: { ...(extra.regex ? { [`${A}use-regex`]: 'true' } : {}), ...extra.annotations },
      ...(extra.tls ? { tls: [{ hosts: [badHost(name)], secretName: `${name}-tls` }] } : {}),
    },
  );
  return made;
}

const snippet = (key: string, value: string) => async (name: string) => [
  badIngress(name, { annotations: { [`${A}${key}`]: value } }),
];

const WEAK_KEY = 'finding 2: a certificate OpenSSL refuses (1024-bit RSA)';

/** HOSTILE are the values of findings 1, 2, 4 and 6, each as the objects the bad tenant applies. */
const HOSTILE: Record<string, (name: string) => Promise<object[]>> = {
  'finding 1: upstream-hash-by that backtracks exponentially': async (name) => [
    badIngress(name, { annotations: { [`${A}upstream-hash-by`]: `$${'a'.repeat(100)}!` } }),
  ],
  [WEAK_KEY]: async (name) => {
    const pair = await weakCertificate(badHost(name));
    return [tlsSecret(`${name}-tls`, pair.certPem, pair.keyPem, BAD_NS), badIngress(name, { tls: true })];
  },
  'finding 2: regex path /api/[\\w-.]+': async (name) => [badIngress(name, { regex: true, path: '/api/[\\w-.]+' })],
  'finding 2: regex path /[\\d-z]': async (name) => [badIngress(name, { regex: true, path: '/[\\d-z]' })],
  'finding 2: regex path /[]a': async (name) => [badIngress(name, { regex: true, path: '/[]a' })],
  'finding 2: regex path /a{99999}': async (name) => [badIngress(name, { regex: true, path: '/a{99999}' })],
  'finding 2: client-body-buffer-size 1g': snippet('client-body-buffer-size', '1g'),
  'finding 2: proxy-buffer-size 0': snippet('proxy-buffer-size', '0'),
  'finding 2: limit-connections 65536': snippet('limit-connections', '65536'),
  'finding 2: proxy-body-size 99999999999999999999g': snippet('proxy-body-size', '99999999999999999999g'),
  'finding 4: auth-url on $http_host': snippet('auth-url', 'http://$http_host/auth'),
  'finding 4: auth-url on $best_http_host': snippet('auth-url', 'http://$best_http_host/auth'),
  'finding 6: server-snippet server_name ~.*': snippet('server-snippet', 'server_name ~.*;'),
  'finding 6: server-snippet listen': snippet('server-snippet', 'listen 127.0.0.1:1;'),
  'finding 6: configuration-snippet stub_status': snippet('configuration-snippet', 'stub_status;'),
  'finding 6: configuration-snippet client_body_in_file_only': snippet(
    'configuration-snippet',
    'client_body_in_file_only on;',
  ),
  'finding 6: configuration-snippet add_before_body': snippet(
    'configuration-snippet',
    'add_before_body /_external-auth-x;',
  ),
  'finding 6: configuration-snippet rewrite … last': snippet(
    'configuration-snippet',
    'rewrite ^ /_external-auth-x last;',
  ),
  'finding 6: server-snippet satisfy': snippet('server-snippet', 'satisfy any;'),
  'finding 6: server-snippet underscores_in_headers': snippet('server-snippet', 'underscores_in_headers on;'),
  'finding 6: configuration-snippet "${uri"': snippet('configuration-snippet', 'set $x "${uri";'),
};

/** PushCase is a push-path entry of issue 27: objects, what follows them, and whether the bad Ingress gets an Event. */
interface PushCase {
  readonly objects: (name: string) => Promise<object[]>;
  /** after the objects are in: requests the case sends, and what must hold of the tables or the metrics */
  readonly after?: (name: string) => Promise<void>;
  /** a validator or nginx says why on the bad Ingress; false where nothing about the objects is wrong */
  readonly event: boolean;
}

/** longName is a legal DNS subdomain of exactly 253 characters ending in `tail`: labels of `fill`, 63 at most. */
const longName = (fill: string, tail: string) => {
  const labels: string[] = [];
  let length = tail.length;
  while (length < 253) {
    // a label, its dot, and never a last gap of one character (a label with no room for its dot)
    const room = 253 - length - 1;
    const label = fill.repeat(Math.min(63, room === 64 ? 62 : room));
    labels.push(label);
    length += label.length + 1;
  }
  return `${labels.join('.')}.${tail}`;
};
/** longHost is a legal host name of 253 characters: the pushed tables' bound for a host. */
const longHost = (name: string) => longName('h', `${name}.example.com`);
/** LONG_SECRET is a legal Secret name of 253 characters (labels of 63 at most, as the model's names are). */
const LONG_SECRET = (name: string) => longName('s', name);
const SHARED_HOSTS = 120;
const sharedHost = (name: string, i: number) => `h${i}.${name}.example.com`;
const REGEX_PATHS = 64;

const nginxCertificates = () =>
  (h.cluster.actor('nginx')?.context.pushed as { certificates?: CertificateTable } | null)?.certificates;

/** PUSH_PATH are issue 27's push-path entries, in Lua mode. */
const PUSH_PATH: Record<string, PushCase> = {
  'push path: entries at their bounds (a 253-character TLS host, a 253-character Secret name)': {
    objects: async (name) => {
      const host = longHost(name);
      const leaf = await issueCertificate({ commonName: 'bounds', dnsNames: [host] });
      return [
        tlsSecret(LONG_SECRET(name), leaf.certPem, leaf.keyPem, BAD_NS),
        ingress(
          name,
          { [host]: [{ path: '/', service: 'web' }] },
          { namespace: BAD_NS, tls: [{ hosts: [host], secretName: LONG_SECRET(name) }] },
        ),
      ];
    },
    after: async (name) => {
      await waitFor('nginx holds the certificate at its bounds', async () => {
        const table = nginxCertificates();
        return table !== undefined && servedNames(table).includes(longHost(name));
      });
      // served over HTTPS with its own certificate (HTTP redirects a TLS host)
      const reply = await get({ host: longHost(name), path: '/', port: h.cluster.httpsPort, https: true });
      expect(reply.backend).toBe('a');
      expect(reply.peerCertificate?.subjectaltname).toBe(`DNS:${longHost(name)}`);
    },
    event: false,
  },
  "push path: a key nginx's OpenSSL cannot read (ML-DSA-44)": {
    objects: async (name) => {
      const pair = await mlDsaCertificate(badHost(name));
      return [tlsSecret(`${name}-tls`, pair.certPem, pair.keyPem, BAD_NS), badIngress(name, { tls: true })];
    },
    event: true,
  },
  'push path: one Secret of about 900 KB named by 120 TLS hosts': {
    objects: async (name) => {
      const hosts = Array.from({ length: SHARED_HOSTS }, (_, i) => sharedHost(name, i));
      const ca = await issueCertificate({ commonName: 'padding CA', isCa: true });
      const leaf = await issueCertificate({ commonName: hosts[0]!, dnsNames: hosts });
      // a long chain: the Secret near the API server's 1 MiB, which once went into the table once per host
      const chain = leaf.certPem + ca.certPem.repeat(Math.floor(900_000 / ca.certPem.length));
      return [
        tlsSecret(`${name}-tls`, chain, leaf.keyPem, BAD_NS),
        ingress(name, Object.fromEntries(hosts.map((host) => [host, [{ path: '/', service: 'web' }]])), {
          namespace: BAD_NS,
          tls: [{ hosts, secretName: `${name}-tls` }],
        }),
      ];
    },
    after: async (name) => {
      await waitFor('nginx holds the shared certificate for every host', async () => {
        const table = nginxCertificates();
        const served = new Set(table ? servedNames(table) : []);
        return Array.from({ length: SHARED_HOSTS }, (_, i) => sharedHost(name, i)).every((host) => served.has(host));
      });
      // stored once, not once per host: the table is about one Secret's size
      expect(JSON.stringify(nginxCertificates()).length).toBeLessThan(3 * 1024 * 1024);
    },
    event: false,
  },
  [`push path: ${REGEX_PATHS} regex paths that backtrack, and requests built to make them`]: {
    objects: async (name) => [
      {
        ...badIngress(name, { regex: true }),
        spec: {
          ingressClassName: 'nginx',
          rules: [
            {
              host: badHost(name),
              http: {
                paths: Array.from({ length: REGEX_PATHS }, (_, i) => ({
                  path: `/${i}/(a|aa)+(b|bb)*$`,
                  pathType: 'ImplementationSpecific',
                  backend: { service: { name: 'web', port: { number: 80 } } },
                })),
              },
            },
          ],
        },
      },
    ],
    after: async (name) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 4 });
      try {
        const attack = `/${REGEX_PATHS - 1}/${'a'.repeat(4000)}!`;
        await Promise.all(Array.from({ length: 40 }, () => send(agent, 'GET', badHost(name), attack).catch(() => 0)));
      } finally {
        agent.destroy();
      }
    },
    event: true,
  },
  'push path: a backend answering every status to odd methods, flooded': {
    objects: async (name) => [
      ...serviceWithEndpoints('statuses', [{ port: statusPodPort() }], BAD_NS),
      ingress(name, { [badHost(name)]: [{ path: '/', service: 'statuses' }] }, { namespace: BAD_NS }),
    ],
    after: async (name) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 8 });
      try {
        for (let status = 200; status < 1000; status += 8)
          await Promise.all(
            ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND', 'FLOOD'].map((method, i) =>
              send(agent, method, badHost(name), `/s/${status + i}`).catch(() => 0),
            ),
          );
      } finally {
        agent.destroy();
      }
      // A good tenant's Ingress still has its series, and the answer stays small.
      const text = await (await fetch(`http://127.0.0.1:${h.cluster.healthzPort}/metrics`)).text();
      expect(text.length).toBeLessThan(40 * 1024 * 1024);
      expect(text).toMatch(/nginx_ingress_controller_requests\{[^}]*namespace="tenant-0"/);
      for (const m of text.matchAll(/nginx_ingress_controller_requests\{[^}]*status="([^"]*)"/g))
        expect(m[1]).toMatch(/^(?:[1-5]\d\d|[1-9]xx|other)$/);
    },
    event: false,
  },
};

/** statusPod answers the status its path names (/s/599), with no body: a backend no dashboard expects. */
let statusPod: Server | undefined;
const statusPodPort = () => {
  if (!statusPod) throw new Error('the status pod is not started');
  return (statusPod.address() as AddressInfo).port;
};

/** send makes one request through nginx; resolves with the status nginx answered */
function send(agent: Agent, method: string, host: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: h.cluster.httpPort, method, path, headers: { host }, agent, timeout: 10_000 },
      (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)),
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject).end();
  });
}

/** healthzSlow counts /healthz answers that took over 1 s (or never came) while `running`. */
class HealthzWatch {
  slow = 0;
  checks = 0;
  private running = true;
  private readonly loop: Promise<void>;
  constructor(port: number) {
    this.loop = (async () => {
      while (this.running) {
        const started = Date.now();
        const answered = await new Promise<boolean>((resolve) => {
          const req = request({ host: '127.0.0.1', port, path: '/healthz', timeout: 1000 }, (res) =>
            res.resume().on('end', () => resolve(true)),
          );
          req.on('timeout', () => req.destroy());
          req.on('error', () => resolve(false));
          req.end();
        });
        this.checks++;
        if (!answered || Date.now() - started > 1000) this.slow++;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }
  async stop() {
    this.running = false;
    await this.loop;
  }
}

const badEvents = async (name: string) =>
  (
    (await h.cluster.client.list('v1', 'Event', BAD_NS)) as {
      items: { message?: string; involvedObject?: { name?: string } }[];
    }
  ).items
    .filter((e) => e.involvedObject?.name === name)
    .map((e) => e.message ?? '');

describe.each(['lua', 'rendered'] as const)('certificates and endpoints %s', (mode) => {
  beforeAll(async () => {
    const seed: object[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: BAD_NS } }];
    round = 0;
    h = await Harness.start({ name: mode === 'lua' ? 'hostile-tenant' : 'hostile-tenant-rendered', seed, mode });
    // Snippets as permissive as a cluster admin can make them, so that finding 6 is tested at all.
    await h.cluster.apply({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace: 'default', name: 'ingress-config' },
      data: { 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' },
    });
    const backend = h.backends[0]!;
    statusPod = createServer((req, res) => {
      req.resume();
      res.writeHead(Number(/^\/s\/(\d{3})$/.exec(req.url ?? '')?.[1] ?? 200), { 'content-length': '0' }).end();
    });
    await new Promise<void>((resolve) => statusPod!.listen(0, '127.0.0.1', resolve));
    for (let i = 0; i < GOOD; i++) {
      await h.cluster.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: tenant(i) } });
      for (const o of serviceWithEndpoints('web', [{ port: backend.port }], tenant(i))) await h.cluster.apply(o);
      await h.cluster.apply(goodIngress(i));
    }
    for (const o of serviceWithEndpoints('web', [{ port: backend.port }], BAD_NS)) await h.cluster.apply(o);
    await waitFor(
      'the good tenants served',
      async () => {
        for (let i = 0; i < GOOD; i++)
          if ((await get({ host: `t${i}.example.com`, path: '/', port: h.cluster.httpPort })).backend !== 'a')
            return false;
        return true;
      },
      20_000,
    );
    tenants = new Traffic(
      h.cluster.httpPort,
      Array.from({ length: GOOD }, (_, i) => ({ host: `t${i}.example.com`, path: '/', backend: 'a' })),
      20,
    );
    tenants.start();
  }, 120_000);

  afterAll(async () => {
    await tenants?.stop();
    await h?.close();
    await new Promise((resolve) => (statusPod ? statusPod.close(resolve) : resolve(undefined)));
  }, 60_000);

  it('a hostile tenant stalls, blocks and bypasses no one', async () => {
    const healthz = new HealthzWatch(h.cluster.healthzPort);
    const outcomes: string[] = [];
    try {
      const cases: [string, PushCase][] = [
        ...Object.entries(HOSTILE)
          .filter(([name]) => mode === 'lua' || name === WEAK_KEY)
          .map(([name, objects]): [string, PushCase] => [name, { objects, event: true }]),
        ...(mode === 'lua' ? Object.entries(PUSH_PATH) : []),
      ];
      for (const [k, [name, { objects, after, event }]] of cases.entries()) {
        const fault = h.begin(`hostile tenant: ${name}`);
        const bad = `bad-${k}`;
        const applied = await objects(bad);
        for (const object of applied) await h.cluster.apply(object);
        round++;
        const moved = Date.now();
        for (let i = 0; i < GOOD; i++) await h.cluster.apply(goodIngress(i));
        await waitFor(
          `${name}: the good tenants' changes served`,
          async () => {
            for (let i = 0; i < GOOD; i++)
              if (
                (await get({ host: `t${i}.example.com`, path: `/r${round}`, port: h.cluster.httpPort })).backend !== 'a'
              )
                return false;
            return true;
          },
          10_000,
          25,
        );
        const servedMs = Date.now() - moved;
        await after?.(bad);
        // Whoever refused the value (a validator, or nginx through the quarantine) said so on the Ingress.
        if (event)
          await waitFor(
            `${name}: an Event on the bad Ingress`,
            async () => (await badEvents(bad)).length > 0,
            10_000,
            100,
          );
        else expect(await badEvents(bad), `${name}: no Event, nothing is wrong`).toEqual([]);
        const byNginx = (await badEvents(bad)).some((m) => m.includes('nginx refused the config with this Ingress'));
        if (byNginx) h.excluded.add(`${BAD_NS}/${bad}`);
        // the key: nginx -t judges a certificate file; a pushed one is judged by the model before the handshake
        if (name === WEAK_KEY) expect(byNginx, name).toBe(mode === 'rendered');
        const outcome = !event ? 'served' : byNginx ? 'left out after nginx refused it' : 'refused by a validator';
        outcomes.push(`${name}: ${outcome}, good changes served in ` + `${servedMs} ms`);
        await fault.end(15_000, { detail: outcomes.at(-1)! });
        // The tenant repents: its objects go; the next fault's convergence check covers what follows.
        for (const object of applied) await h.cluster.remove(object);
        h.excluded.clear();
      }
    } finally {
      await healthz.stop();
    }
    h.notes.push(...outcomes.map((o) => `hostile tenant: ${o}`));
    h.notes.push(
      `hostile tenant: /healthz checked ${healthz.checks} times, ${healthz.slow} slower than 1 s; good tenants ` +
        `${tenants.requests} requests, ${tenants.lost().length} lost`,
    );
    expect(healthz.slow).toBe(0);
    expect(tenants.lost()).toEqual([]);
    h.expectSurvived();
  });
});
