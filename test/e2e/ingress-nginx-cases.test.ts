/**
 * ingress-nginx's own e2e cases, ported as data (test/ingress-nginx-cases/, format in its README.md) and run
 * through real nginx in both modes: each YAML document is one scene (manifests, ConfigMap, flags, echo backends,
 * certificates) started once, and each of its cases an `it` named `<file> › <ingress-nginx It text>`, whose
 * requests go over real HTTP(S) on loopback and whose answers are checked as ingress-nginx's Expect lines check
 * them. A case marked `known` runs as `it.fails`: it turns red when the gap it names is fixed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { startEchoServer, type EchoKind, type EchoServer } from '../support/echo-server.js';
import { ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { SCENE_MODES, startScene, type Scene, type SceneMode } from './annotations-harness.js';

const ROOT = new URL('../ingress-nginx-cases/', import.meta.url).pathname;
// Each rendered scene runs the CLI once (70-odd starts of Node): let them share compiled code.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'ingress-actors-cases-compile-cache');
const PREFIX = 'nginx.ingress.kubernetes.io/';

/** Certificate is one issued for a file: a CA (Secret with ca.crt), a server certificate (TLS Secret) or a client's. */
interface Certificate {
  readonly name: string;
  readonly ca?: boolean;
  /** DNS names: a server certificate, written as the kubernetes.io/tls Secret `name` */
  readonly hosts?: string[];
  /** the CA that signs it (by name), else the file's own test CA */
  readonly issuer?: string;
  /** with `hosts`: also put this CA's certificate in the Secret as ca.crt (ingress-nginx's CreateIngressMASecret) */
  readonly caCrt?: string;
  /** the subject's common name (default: the first host, else the name) */
  readonly commonName?: string;
  readonly namespace?: string;
}

/** Shorthand is ingress-nginx's framework.NewSingleIngress as data: one host, Prefix paths, one Service. */
interface Shorthand {
  readonly ingress: string;
  readonly namespace?: string;
  readonly host?: string;
  readonly path?: string;
  readonly paths?: string[];
  readonly pathType?: string;
  readonly service?: string;
  readonly port?: number | string;
  /** keys without a `/` take the nginx.ingress.kubernetes.io/ prefix */
  readonly annotations?: Record<string, string>;
  /** the TLS Secret for the host */
  readonly tls?: string;
  readonly class?: string | null;
}

interface Expectation {
  readonly status?: number;
  /** with `concurrent`: how many answers had each status */
  readonly statusCounts?: Record<string, number>;
  /** exact value, `/regex/`, or null for absent; a repeated header (Set-Cookie) matches when one of its values does */
  readonly headers?: Record<string, string | null>;
  readonly absentHeaders?: string[];
  readonly body?:
    | string
    | string[]
    | {
        contains?: string | string[];
        notContains?: string | string[];
        equals?: string;
        /** regular expressions (JavaScript syntax, no slashes) */
        matches?: string | string[];
        notMatches?: string | string[];
      };
  /** the TLS version (`TLSv1.2`) and cipher (OpenSSL's name) of an https request */
  readonly tls?: { version?: string; cipher?: string };
  /** the common name of the certificate nginx presented (https) */
  readonly certificateCN?: string;
  /** the echo backend's `Hostname:` (which backend answered) */
  readonly backend?: string;
  /** what the echo backend saw: path (request URI), method, request headers (lowercase names; null: absent) */
  readonly backendSaw?: { path?: string; method?: string; headers?: Record<string, string | null> };
}

interface RequestSpec {
  readonly method?: string;
  readonly scheme?: 'http' | 'https';
  readonly host: string;
  readonly path?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** a body of this many bytes instead (client_max_body_size cases) */
  readonly bodySize?: number;
  /** the client's address (127.0.0.2 … stand in for other clients) */
  readonly from?: string;
  /** a PROXY protocol header line sent first on the connection (`PROXY TCP4 … \r\n`) */
  readonly proxyProtocol?: string;
  /** a client certificate by name (https) */
  readonly cert?: string;
  /** send it this many times, checking each answer */
  readonly repeat?: number;
  /** with `repeat`: the least count of answers each echo backend (by Hostname) must have given */
  readonly backendsAtLeast?: Record<string, number>;
  /** with `repeat`: how many different echo backends (by Hostname) answered */
  readonly backendsDistinct?: number;
  /** send this many at once; `expect.statusCounts` counts their answers */
  readonly concurrent?: number;
  readonly expect: Expectation;
}

interface Case {
  readonly it: string;
  readonly differs?: string;
  readonly known?: string | Partial<Record<SceneMode, string>>;
  /** each a substring or `/regex/` some problem of the scene must match */
  readonly problems?: string[];
  readonly requests: RequestSpec[];
}

interface SceneFile {
  readonly from: string;
  readonly modes?: SceneMode[];
  readonly configMap?: Record<string, string>;
  readonly flags?: string[];
  /**
   * echo backends by name (default `[echo]`), or `{name, kind, replicas}`: another kind of test server, or several
   * pods behind the one Service (named <name>-0, <name>-1, …)
   */
  readonly backends?: (string | { name: string; kind?: EchoKind; replicas?: number })[];
  readonly certificates?: Certificate[];
  readonly objects?: (Shorthand | Record<string, unknown>)[];
  readonly cases: Case[];
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) =>
      entry.isDirectory()
        ? yamlFiles(join(dir, entry.name))
        : entry.name.endsWith('.yaml')
          ? [join(dir, entry.name)]
          : [],
    )
    .sort();
}

function loadScenes(): { file: string; scene: SceneFile }[] {
  return yamlFiles(ROOT).flatMap((path) => {
    const file = relative(ROOT, path);
    return parseAllDocuments(readFileSync(path, 'utf8')).map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]!.message}`);
      return { file, scene: doc.toJS() as SceneFile };
    });
  });
}

const prefixed = (annotations: Record<string, string> = {}): Record<string, string> =>
  Object.fromEntries(Object.entries(annotations).map(([k, v]) => [k.includes('/') ? k : `${PREFIX}${k}`, String(v)]));

/** expand turns a Shorthand into the Ingress ingress-nginx's NewSingleIngress would make; manifests pass as they are. */
function expand(object: Shorthand | Record<string, unknown>): object {
  if ('stringData' in object && object.kind === 'Secret') {
    // stringData as the API server would store it: the cases keep htpasswd lines readable
    const { stringData, ...rest } = object as { stringData: Record<string, string> };
    const data = Object.fromEntries(Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
    return { ...rest, data };
  }
  if (!('ingress' in object) || typeof object.ingress !== 'string') return object;
  const s = object as Shorthand;
  const port = s.port ?? 80;
  const paths = (s.paths ?? [s.path ?? '/']).map((path) => ({
    path,
    pathType: s.pathType ?? 'Prefix',
    backend: {
      service: { name: s.service ?? 'echo', port: typeof port === 'string' ? { name: port } : { number: port } },
    },
  }));
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: s.ingress, namespace: s.namespace ?? 'default', annotations: prefixed(s.annotations) },
    spec: {
      ...(s.class === null ? {} : { ingressClassName: s.class ?? 'nginx' }),
      ...(s.tls ? { tls: [{ hosts: s.host ? [s.host] : [], secretName: s.tls }] } : {}),
      rules: [{ ...(s.host ? { host: s.host } : {}), http: { paths } }],
    },
  };
}

/** fill replaces `{{name}}` by a value of `vars` (backends as 127.0.0.1:port, httpPort, httpsPort) in every string. */
function fill<T>(value: T, vars: Record<string, string>): T {
  return JSON.parse(
    JSON.stringify(value).replace(/\{\{([\w.-]+)\}\}/g, (whole, name: string) => {
      const found = vars[name];
      if (found === undefined) throw new Error(`unknown placeholder ${whole}`);
      return found;
    }),
  ) as T;
}

async function issue(certificates: Certificate[]): Promise<{ pairs: Map<string, KeyPair>; secrets: object[] }> {
  const testCa = await issueCertificate({ commonName: 'ingress-nginx-cases CA', isCa: true });
  const pairs = new Map<string, KeyPair>();
  const secrets: object[] = [];
  for (const c of certificates) {
    const issuer = c.issuer ? pairs.get(c.issuer) : c.ca ? undefined : testCa;
    if (c.issuer && !issuer) throw new Error(`certificate ${c.name}: issuer ${c.issuer} comes later or not at all`);
    const pair = await issueCertificate({
      commonName: c.commonName ?? c.hosts?.[0] ?? c.name,
      ...(c.hosts ? { dnsNames: c.hosts } : {}),
      ...(c.ca ? { isCa: true } : {}),
      ...(issuer ? { issuer } : {}),
    });
    pairs.set(c.name, pair);
    const namespace = c.namespace ?? 'default';
    if (c.hosts) {
      const secret = tlsSecret(c.name, pair.certPem, pair.keyPem, namespace);
      const ca = c.caCrt ? pairs.get(c.caCrt) : undefined;
      if (c.caCrt && !ca) throw new Error(`certificate ${c.name}: CA ${c.caCrt} comes later or not at all`);
      if (ca) Object.assign(secret.data, { 'ca.crt': Buffer.from(ca.certPem).toString('base64') });
      secrets.push(secret);
    } else if (c.ca) {
      secrets.push({
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata: { namespace, name: c.name },
        data: { 'ca.crt': Buffer.from(pair.certPem).toString('base64') },
      });
    }
  }
  return { pairs, secrets };
}

interface Answer {
  readonly tls?: { version: string | null; cipher: string; cn: string | undefined };
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** proxied opens a connection to nginx that starts with the request's PROXY protocol line (then TLS for https). */
function proxied(port: number, r: RequestSpec, cert: KeyPair | undefined): Socket {
  const raw = connect({ host: '127.0.0.1', port, ...(r.from ? { localAddress: r.from } : {}) });
  raw.write(r.proxyProtocol!);
  if (r.scheme !== 'https') return raw;
  return tlsConnect({
    socket: raw,
    servername: r.host,
    rejectUnauthorized: false,
    ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
  });
}

function send(scene: Scene, r: RequestSpec, pairs: Map<string, KeyPair>): Promise<Answer> {
  const https = r.scheme === 'https';
  const cert = r.cert ? pairs.get(r.cert) : undefined;
  if (r.cert && !cert) throw new Error(`no certificate ${r.cert}`);
  const port = https ? scene.httpsPort : scene.httpPort;
  const body =
    r.bodySize !== undefined ? Buffer.alloc(r.bodySize, 'x') : r.body === undefined ? undefined : Buffer.from(r.body);
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      {
        host: '127.0.0.1',
        port,
        path: r.path ?? '/',
        method: r.method ?? 'GET',
        headers: {
          host: r.host,
          ...(body ? { 'content-length': String(body.length) } : {}),
          ...r.headers,
        },
        // createConnection is only used without an agent (agent: false makes one)
        ...(r.proxyProtocol ? { createConnection: () => proxied(port, r, cert) } : { agent: false }),
        ...(r.from ? { localAddress: r.from } : {}),
        ...(https
          ? { servername: r.host, rejectUnauthorized: false, ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}) }
          : {}),
      },
      (res) => {
        const socket = res.socket as TLSSocket;
        const tls = https ? { version: socket.getProtocol(), cipher: socket.getCipher().standardName } : undefined;
        const openssl = https ? socket.getCipher().name : '';
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            ...(tls
              ? {
                  tls: {
                    version: tls.version,
                    cipher: openssl,
                    cn: [socket.getPeerCertificate().subject?.CN ?? []].flat()[0],
                  },
                }
              : {}),
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`${r.host}${r.path ?? '/'} timed out`)));
    // nginx may answer (413) and close before it read the whole body: the answer counts, not the broken pipe
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    req.end(body);
  });
}

/** matches says whether `actual` is `expected`, or matches it when `expected` is `/regex/`. */
function matches(actual: string, expected: string): boolean {
  const regex = /^\/(.*)\/([a-z]*)$/s.exec(expected);
  return regex ? new RegExp(regex[1]!, regex[2]).test(actual) : actual === expected;
}

/** seen reads what an echo backend printed: its Hostname, the request line fields and the request headers. */
function seen(body: string): { hostname?: string; path?: string; method?: string; headers: Record<string, string> } {
  const field = (name: string) => new RegExp(`^\\t${name}=(.*)$`, 'm').exec(body)?.[1];
  const headers: Record<string, string> = {};
  const section = /\nRequest Headers:\n((?:\t.*\n)*)/.exec(body)?.[1] ?? '';
  for (const line of section.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) headers[line.slice(1, at)] = line.slice(at + 1);
  }
  return {
    hostname: /^Hostname: (.*)$/m.exec(body)?.[1],
    path: field('real path'),
    method: field('method'),
    headers,
  };
}

function check(answer: Answer, e: Expectation, what: string): void {
  const shown = `${what}: ${answer.status} ${JSON.stringify(answer.headers)}\n${answer.body.slice(0, 2000)}`;
  if (e.status !== undefined) expect(answer.status, shown).toBe(e.status);
  if (e.tls?.version !== undefined) expect(answer.tls?.version, shown).toBe(e.tls.version);
  if (e.tls?.cipher !== undefined) expect(answer.tls?.cipher, shown).toBe(e.tls.cipher);
  if (e.certificateCN !== undefined) expect(answer.tls?.cn, shown).toBe(e.certificateCN);
  for (const [name, expected] of Object.entries(e.headers ?? {})) {
    const actual = answer.headers[name.toLowerCase()];
    if (expected === null) {
      expect(actual, `${shown}\nheader ${name} should be absent`).toBeUndefined();
      continue;
    }
    const values = actual === undefined ? [] : Array.isArray(actual) ? actual : [actual];
    expect(
      values.some((v) => matches(v, String(expected))),
      `${shown}\nheader ${name}: ${JSON.stringify(actual)} should be ${expected}`,
    ).toBe(true);
  }
  for (const name of e.absentHeaders ?? []) {
    expect(answer.headers[name.toLowerCase()], `${shown}\nheader ${name} should be absent`).toBeUndefined();
  }
  const body = typeof e.body === 'string' || Array.isArray(e.body) ? { contains: e.body } : (e.body ?? {});
  for (const part of [body.contains ?? []].flat()) expect(answer.body, shown).toContain(part);
  for (const part of [body.notContains ?? []].flat()) expect(answer.body, shown).not.toContain(part);
  if (body.equals !== undefined) expect(answer.body, shown).toBe(body.equals);
  for (const regex of [body.matches ?? []].flat()) expect(answer.body, shown).toMatch(new RegExp(regex));
  for (const regex of [body.notMatches ?? []].flat()) expect(answer.body, shown).not.toMatch(new RegExp(regex));
  if (e.backend !== undefined || e.backendSaw !== undefined) {
    const saw = seen(answer.body);
    if (e.backend !== undefined) expect(saw.hostname, shown).toBe(e.backend);
    const b = e.backendSaw ?? {};
    if (b.path !== undefined) expect(saw.path, shown).toBe(b.path);
    if (b.method !== undefined) expect(saw.method, shown).toBe(b.method);
    for (const [name, expected] of Object.entries(b.headers ?? {})) {
      const actual = saw.headers[name.toLowerCase()];
      if (expected === null) expect(actual, `${shown}\nthe backend should not see ${name}`).toBeUndefined();
      else {
        expect(actual, `${shown}\nthe backend saw ${name}`).toBeDefined();
        expect(matches(actual!, String(expected)), `${shown}\nthe backend saw ${name}=${actual}, not ${expected}`).toBe(
          true,
        );
      }
    }
  }
}

/** backendVars are the placeholders of each Service's first pod: `{{name}}` its address, `{{name.port}}` its port. */
const backendVars = (services: { name: string; pods: EchoServer[] }[]): Record<string, string> =>
  Object.fromEntries(
    services.flatMap(({ name, pods }) => [
      [name, `127.0.0.1:${pods[0]!.port}`],
      [`${name}.port`, String(pods[0]!.port)],
    ]),
  );

const knownIn = (c: Case, mode: SceneMode): string | undefined =>
  typeof c.known === 'string' ? c.known : c.known?.[mode];

/** Running is one started scene with its backends and certificates. */
interface Running {
  readonly scene: Scene;
  readonly backends: EchoServer[];
  readonly services: { name: string; pods: EchoServer[] }[];
  readonly pairs: Map<string, KeyPair>;
}

async function startOne(file: string, spec: SceneFile, mode: SceneMode): Promise<Running> {
  const backends: EchoServer[] = [];
  const services: { name: string; pods: EchoServer[] }[] = [];
  try {
    for (const b of spec.backends ?? ['echo']) {
      const { name, kind, replicas } = typeof b === 'string' ? { name: b, kind: undefined, replicas: undefined } : b;
      const pods: EchoServer[] = [];
      for (let i = 0; i < (replicas ?? 1); i++) {
        pods.push(await startEchoServer(replicas === undefined ? name : `${name}-${i}`, kind));
      }
      backends.push(...pods);
      services.push({ name, pods });
    }
    const vars = backendVars(services);
    const issued = await issue(spec.certificates ?? []);
    const objects = [
      ingressClass(),
      ...services.flatMap((svc) =>
        serviceWithEndpoints(
          svc.name,
          svc.pods.map((pod) => ({ port: pod.port })),
        ),
      ),
      ...issued.secrets,
      ...fill(spec.objects ?? [], vars).map(expand),
    ];
    const scene = await startScene(objects, {
      mode,
      ...(spec.configMap ? { configMap: fill(spec.configMap, vars) } : {}),
      ...(spec.flags ? { flags: spec.flags } : {}),
    });
    // CASES_PROBLEMS=1 prints each scene's problems (what render or the controller reported)
    if (process.env.CASES_PROBLEMS) console.log(`${file} (${mode}) problems:\n${scene.problems}`);
    return { scene, backends, services, pairs: issued.pairs };
  } catch (error) {
    await Promise.all(backends.map((b) => b.close()));
    throw error;
  }
}

const stopOne = async (running: Running): Promise<void> => {
  await running.scene.stop();
  await Promise.all(running.backends.map((b) => b.close()));
};

/**
 * AHEAD is how many scenes start while an earlier one is tested: a scene mostly waits (render, nginx -t, the
 * controller's first sync), so a few in flight keep the whole run short without many nginx at once.
 */
const AHEAD = 5;
// CASES_MODE=rendered (or lua) runs one mode only
const modes = (scene: SceneFile): readonly SceneMode[] =>
  (scene.modes ?? SCENE_MODES).filter((mode) => !process.env.CASES_MODE || mode === process.env.CASES_MODE);
const plan = loadScenes().flatMap(({ file, scene }) => modes(scene).map((mode) => ({ file, spec: scene, mode })));
const starts: (Promise<Running> | undefined)[] = [];
const stopped = new Set<number>();
const startAt = (i: number): Promise<Running> | undefined => {
  if (i >= plan.length) return undefined;
  if (!starts[i]) {
    const { file, spec, mode } = plan[i]!;
    starts[i] = startOne(file, spec, mode);
    starts[i].catch(() => undefined); // awaited (and reported) by its own describe
  }
  return starts[i];
};

// Scenes started ahead for describes that a -t filter then skipped are stopped here.
afterAll(async () => {
  await Promise.all(
    starts.map(async (start, i) => {
      if (!start || stopped.has(i)) return;
      const running = await start.catch(() => undefined);
      if (running) await stopOne(running);
    }),
  );
}, 60_000);

for (const [index, { file, spec, mode }] of plan.entries()) {
  describe(`${file} (${mode}), from ingress-nginx ${spec.from}`, () => {
    let running: Running | undefined;
    // a scene that cannot start fails each of its cases with the reason (a known gap's case then passes as failing)
    let failed: unknown;
    beforeAll(async () => {
      for (let i = index; i <= index + AHEAD; i++) startAt(i);
      try {
        running = await startAt(index);
      } catch (error) {
        failed = error;
      }
    }, 120_000);
    afterAll(async () => {
      stopped.add(index);
      if (running) await stopOne(running);
    });

    for (const c of spec.cases) {
      const known = knownIn(c, mode);
      // CASES_KNOWN=1 runs the known ones as plain its, to read how they fail
      (known && !process.env.CASES_KNOWN ? it.fails : it)(
        `${file} › ${c.it}${known ? ` [known: ${known}]` : ''}`,
        async () => {
          if (!running) throw failed;
          const { scene: s, services, pairs } = running;
          const vars = {
            ...backendVars(services),
            httpPort: String(s.httpPort),
            httpsPort: String(s.httpsPort),
          };
          for (const problem of c.problems ?? []) {
            const lines = s.problems.split('\n');
            expect(
              lines.some((line) => (problem.startsWith('/') ? matches(line, problem) : line.includes(problem))),
              `a problem like ${problem} among:\n${s.problems}`,
            ).toBe(true);
          }
          for (const [n, raw] of c.requests.entries()) {
            const r = fill(raw, vars);
            if (r.concurrent) {
              const answers = await Promise.all(Array.from({ length: r.concurrent }, () => send(s, r, pairs)));
              const counts: Record<string, number> = {};
              for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
              expect(counts, `request ${n + 1}, ${r.concurrent} at once`).toEqual(r.expect.statusCounts);
              continue;
            }
            for (let i = 0; i < (r.repeat ?? 1); i++) {
              const what = `request ${n + 1} (${r.method ?? 'GET'} ${r.scheme ?? 'http'}://${r.host}${r.path ?? '/'})`;
              check(await send(s, r, pairs), r.expect, what);
            }
          }
        },
      );
    }
  });
}
