/**
 * convert's table-driven suite: each folder in test/convert/cases is one case. input.yaml holds Ingresses (and the
 * Services, ConfigMaps and Secrets they name); expected.yaml the Gateway API objects convert prints; expected.stderr
 * the lines it reports. Every converted object also reads back through the Gateway API readers
 * (src/model/gateway/read.ts) without an invalid value, and every route is Accepted by buildGatewayRoutes.
 * A case's options.json holds convert's flags for it (`tcpServices`, `udpServices`).
 * UPDATE_CONVERT=1 rewrites the expected files (read the diff before committing it).
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadManifests } from '../../src/manifests/load.js';
import {
  type ConvertOptions,
  convertIngresses,
  defaultConvertOptions,
  unexpressedLine,
} from '../../src/convert/convert.js';
import { objectName } from '../../src/convert/object-name.js';
import { buildGatewayRoutes, readGateway, readHTTPRoute, readReferenceGrant } from '../../src/model/gateway/index.js';
import { toYaml } from '../../src/cli/convert.js';
import { readTCPRoute, readTLSRoute, readUDPRoute } from '../../src/model/gateway/read-l4.js';
import { readBackendTLSPolicy } from '../../src/model/gateway/backend-tls.js';
import { checkObjectName } from '../../src/model/validate.js';
import type { ConfigMap } from '../../src/model/snapshot.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingressClass, tlsSecret } from '../support/manifests.js';

const CASES = new URL('./cases/', import.meta.url).pathname;
const cases = (await readdir(CASES, { withFileTypes: true }))
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

/** caseOptions are a case's flags (its options.json: `tcpServices`, `udpServices`), if it has any. */
async function caseOptions(dir: string): Promise<Partial<ConvertOptions>> {
  const text = await readFile(join(dir, 'options.json'), 'utf8').catch(() => '{}');
  return JSON.parse(text) as Partial<ConvertOptions>;
}

async function run(name: string) {
  const snapshot = await loadManifests([join(CASES, name, 'input.yaml')]);
  const options = { ...defaultConvertOptions, ...(await caseOptions(join(CASES, name))) };
  return { snapshot, result: convertIngresses(snapshot, options) };
}

describe('convert', () => {
  it('has cases', () => expect(cases.length).toBeGreaterThanOrEqual(8));

  describe.each(cases)('%s', (name) => {
    it('prints the expected objects and reports the expected lines', async () => {
      const { result } = await run(name);
      const yaml = toYaml(result.objects);
      const stderr = result.unexpressed.map((u) => `${unexpressedLine(u)}\n`).join('');
      if (process.env.UPDATE_CONVERT) {
        await writeFile(join(CASES, name, 'expected.yaml'), yaml);
        await writeFile(join(CASES, name, 'expected.stderr'), stderr);
      }
      expect(yaml).toBe(await readFile(join(CASES, name, 'expected.yaml'), 'utf8'));
      expect(stderr).toBe(await readFile(join(CASES, name, 'expected.stderr'), 'utf8'));
      // The printed YAML parses back to the same objects.
      const back = parseAllDocuments(yaml).map((d) => d.toJS());
      expect(back).toEqual(JSON.parse(JSON.stringify(result.objects)));
    });

    it('gives every object a valid name of its own (kubectl apply keeps one object per kind, namespace and name)', async () => {
      const { result } = await run(name);
      const keys = result.objects.map((o) => `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`);
      expect(new Set(keys).size, keys.join('\n')).toBe(keys.length);
      for (const o of result.objects)
        expect(checkObjectName(o.metadata?.name), `${o.kind} ${o.metadata?.name}`).toMatchObject({ ok: true });
    });

    it('gives objects the Gateway API readers accept whole', async () => {
      const { result } = await run(name);
      for (const object of result.objects) {
        if (object.kind === 'Gateway') {
          const gw = readGateway(object);
          expect(gw).not.toBeNull();
          for (const l of gw!.listeners) expect(l.invalid, `${object.metadata?.name} ${l.name}`).toEqual([]);
        }
        if (object.kind === 'HTTPRoute') expect(readHTTPRoute(object)?.invalid, object.metadata?.name).toEqual([]);
        const l4 = { TLSRoute: readTLSRoute, TCPRoute: readTCPRoute, UDPRoute: readUDPRoute }[object.kind ?? ''];
        if (l4) expect(l4(object)?.invalid, `${object.kind} ${object.metadata?.name}`).toEqual([]);
        if (object.kind === 'BackendTLSPolicy')
          expect(readBackendTLSPolicy(object)?.invalid, object.metadata?.name).toEqual([]);
        if (object.kind === 'ReferenceGrant') expect(readReferenceGrant(object)).not.toBeNull();
      }
    });

    it('gives routes every parent accepts, with their backends resolved', async () => {
      const { snapshot, result } = await run(name);
      const of = (kind: string) => result.objects.filter((o) => o.kind === kind);
      const namespaces = [
        ...new Set(result.objects.map((o) => o.metadata?.namespace).filter((ns): ns is string => ns !== undefined)),
      ].map((ns) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: ns, labels: { 'kubernetes.io/metadata.name': ns } },
      }));
      // A Gateway per IngressClass, as each ingress-nginx class had a controller and an address of its own: with
      // one controller, each its own address (`--gateway-addresses`), else the newer one's listeners conflict.
      const gateways = of('Gateway');
      const built = buildGatewayRoutes({
        controllerName: 'ingress-actors.io/gateway-controller',
        ...(gateways.length > 1 ? { addresses: gateways.map((_, i) => `127.0.0.${200 + i}`) } : {}),
        // passed-through hosts' TLS listeners share 443 with HTTPS ones, as under --enable-ssl-passthrough
        ports: { http: 80, https: 443, sharedHttps: true },
        gatewayClasses: of('GatewayClass'),
        gateways,
        httpRoutes: of('HTTPRoute'),
        tlsRoutes: of('TLSRoute'),
        tcpRoutes: of('TCPRoute'),
        udpRoutes: of('UDPRoute'),
        referenceGrants: of('ReferenceGrant'),
        services: snapshot.services,
        secrets: snapshot.secrets,
        // the client CA's ConfigMap a converted Gateway's frontend validation names
        configMaps: [...snapshot.configMaps, ...(of('ConfigMap') as ConfigMap[])],
        namespaces,
      });
      const routeStatus = [
        ...built.status.httpRoutes,
        ...(built.status.tlsRoutes ?? []),
        ...(built.status.tcpRoutes ?? []),
        ...(built.status.udpRoutes ?? []),
      ];
      for (const route of routeStatus)
        for (const parent of route.parents) {
          const accepted = parent.conditions.find((c) => c.type === 'Accepted');
          expect(accepted?.status, `${route.namespace}/${route.name} ${accepted?.message}`).toBe('True');
          // Backends are resolved where the manifests hold the Service.
          const resolved = parent.conditions.find((c) => c.type === 'ResolvedRefs');
          if (snapshot.services.length > 0) expect(resolved?.status, `${route.name} ${resolved?.message}`).toBe('True');
        }
      for (const gw of built.status.gateways)
        for (const l of gw.listeners)
          for (const c of l.conditions.filter((x) => x.type === 'Accepted' || x.type === 'Conflicted'))
            expect(c.status, `${gw.name} ${l.name} ${c.type} ${c.message}`).toBe(
              c.type === 'Accepted' ? 'True' : 'False',
            );
      expect(built.status.httpRoutes.length).toBe(of('HTTPRoute').length);
      expect(routeStatus.length).toBe(
        of('HTTPRoute').length + of('TLSRoute').length + of('TCPRoute').length + of('UDPRoute').length,
      );
    });
  });
});

describe('agrees with the controller (the model) on', () => {
  it('which Ingress gives a TLS host its certificate (case tls-age-order)', async () => {
    const { snapshot, result } = await run('tls-age-order');
    const leaf = await issueCertificate({ commonName: 'example.com', dnsNames: ['*.example.com'] });
    // Every Secret the Ingresses name, so that the model serves each host the one it settles on.
    const secrets = snapshot.ingresses.flatMap((i) =>
      (i.spec?.tls ?? []).map((t) => tlsSecret(t.secretName!, leaf.certPem, leaf.keyPem, i.metadata!.namespace)),
    );
    const { model } = buildModel(
      { ...snapshot, ingressClasses: [ingressClass()], secrets } as never,
      defaultBuildOptions,
    );
    const served = (host: string) => {
      const file = model.servers.find((s) => s.host === host)?.certificateFile;
      return model.certificates.find((c) => c.file === file)?.id;
    };
    const gateway = result.objects.find((o) => o.kind === 'Gateway') as unknown as {
      metadata: { namespace: string };
      spec: { listeners: { hostname?: string; tls?: { certificateRefs: { name: string; namespace?: string }[] } }[] };
    };
    const hosts = gateway.spec.listeners.filter((l) => l.tls);
    expect(hosts.map((l) => l.hostname).sort()).toEqual(['shared.example.com', 'stamp.example.com']);
    for (const l of hosts) {
      const ref = l.tls!.certificateRefs[0]!;
      expect(`${ref.namespace ?? gateway.metadata.namespace}/${ref.name}`, l.hostname).toBe(served(l.hostname!));
    }
  });

  it('which canary Ingresses are left out (case canary-invalid)', async () => {
    const { snapshot, result } = await run('canary-invalid');
    const { problems } = buildModel({ ...snapshot, ingressClasses: [ingressClass()] }, defaultBuildOptions);
    const leftOut = (owner: string) =>
      problems.some((p) => `${p.namespace}/${p.name}` === owner && p.message.endsWith('canary Ingress left out'));
    const reported = (owner: string) =>
      result.unexpressed.some((u) => u.ingress === owner && u.reason.endsWith('canary Ingress left out'));
    for (const owner of ['default/heavy', 'default/typo', 'default/fine'])
      expect(reported(owner), owner).toBe(leftOut(owner));
    expect(reported('default/heavy') && reported('default/typo') && !reported('default/fine')).toBe(true);
  });
});

describe('objectName', () => {
  const long = 'a'.repeat(60);
  it.each([
    ['a name that fits stays as it is', 'web', 'example.com', 'web-example.com'],
    ['an empty suffix adds nothing', 'web', '', 'web'],
    ['a label too long: the base is shortened before a hash', long, 'bcdef', 'a{48}-[0-9a-f]{8}-bcdef'],
    ['a suffix too long to fit beside any base: the whole is shortened', 'web', long, 'web-a{50}-[0-9a-f]{8}'],
    ['longer than 253 in all', `${long}.`.repeat(4) + long, 'b', '(a{60}\\.){3}a{52}-[0-9a-f]{8}-b'],
  ])('%s', (_, base, suffix, expected) => {
    const name = objectName(base, suffix);
    expect(name).toMatch(new RegExp(`^${expected}$`));
    expect(checkObjectName(name).ok).toBe(true);
  });

  it('tells apart names that share their start, and gives the same name every time', () => {
    expect(objectName(long, 'x.example.com')).not.toBe(objectName(long, 'y.example.com'));
    expect(objectName(`${long}-1`, 'b')).not.toBe(objectName(`${long}-2`, 'b'));
    expect(objectName(long, 'b')).toBe(objectName(long, 'b'));
  });
});

describe('toYaml', () => {
  // kubectl reads YAML 1.1 (sigs.k8s.io/yaml): `off` unquoted would reach the API server as false
  it.each([
    ['off'],
    ['On'],
    ['yes'],
    ['n'],
    ['1:20'],
    ['1_000'],
    ['0o17'],
    ['0x1F'],
    ['.inf'],
    ['~'],
    ['null'],
    ['2026-01-01'],
    ['012'],
  ])('quotes %s, which YAML 1.1 or 1.2 reads as something else', (value) => {
    const yaml = toYaml([{ value }]);
    expect(yaml).toBe(`value: "${value}"\n`);
    expect(parseAllDocuments(yaml)[0]!.toJS()).toEqual({ value });
    expect(parseAllDocuments(yaml, { version: '1.1' })[0]!.toJS()).toEqual({ value });
  });

  it.each([['plain'], ['web.example.com'], ['nginx-ingress'], ['/path']])('leaves %s plain', (value) => {
    expect(toYaml([{ value }])).toBe(`value: ${value}\n`);
  });
});
