/**
 * The conformance suite's own parts, without a controller: an echo pod answers as echo-basic does and the
 * comparison (CompareRoundTrip) accepts what matches and names what does not; the report counts as reports.go does;
 * the TCP, UDP and DNS pods answer as echo-basic and coredns do, and the clients judge them as conformance/utils does.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nginxBinary } from '../../src/nginx/binary.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { freePort } from '../support/net.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { corednsReply, startCorednsPod, startEchoPod, startTcpEchoPod, startUdpEchoPod, type EchoPod } from './echo.js';
import { endpointSlicesFor, overlayAddresses, UNUSABLE_ADDRESS, USABLE_ADDRESS } from './harness.js';
import {
  checkDnsReply,
  dnsExchange,
  dnsQuery,
  expectTcpEventually,
  expectUdpEcho,
  tcpEchoSendOnce,
  udpEchoSendOnce,
} from './l4-clients.js';
import type { PeerCertificate } from 'node:tls';
import { compare, goVerifyHostname, send, type Target } from './http.js';
import { conformanceReport, type Inventory } from './report.js';

describe('an echo pod and CompareRoundTrip', () => {
  let pod: EchoPod;
  let target: Target;
  beforeAll(async () => {
    pod = await startEchoPod(
      '127.0.0.2',
      await freePort(),
      'infra-backend-v1-abc12-xyz34',
      'gateway-conformance-infra',
      'infra-backend-v1',
    );
    target = { address: pod.ip, listenerPort: pod.port, port: pod.port, scheme: 'http' };
  });
  afterAll(() => pod.close());

  it('echoes path, host, method, headers (each line a value), namespace and pod, and sets the asked response headers', async () => {
    const got = await send(
      target,
      { host: 'example.com', path: '/a//b?x=1', headers: { Version: 'one' } },
      {
        'X-Echo-Set-Header': 'X-Foo:bar,X-Foo:baz',
      },
    );
    const body = JSON.parse(got.body);
    expect(body).toMatchObject({
      path: '/a//b?x=1',
      host: 'example.com',
      method: 'GET',
      namespace: 'gateway-conformance-infra',
      pod: 'infra-backend-v1-abc12-xyz34',
    });
    expect(body.headers.Version).toEqual(['one']);
    expect(got.headers['x-foo']).toBe('bar,baz');
    expect((await send(target, { path: '/status/503' }, {})).status).toBe(503);
  });

  it('accepts a matching answer and says why another does not match', async () => {
    const got = await send(target, { path: '/set', headers: { 'X-Header-Set': 'v' } }, {});
    const base = { request: { path: '/set' }, backend: 'infra-backend-v1', namespace: 'gateway-conformance-infra' };
    expect(compare(base, got)).toBeNull();
    expect(compare({ ...base, expectedRequest: { path: '/set', headers: { 'x-header-set': 'v' } } }, got)).toBeNull();
    expect(compare({ ...base, backend: 'infra-backend-v2' }, got)).toMatch(/expected pod infra-backend-v2/);
    expect(compare({ ...base, namespace: 'gateway-conformance-web-backend' }, got)).toMatch(/expected namespace/);
    expect(compare({ ...base, expectedRequest: { path: '/set', absentHeaders: ['X-Header-Set'] } }, got)).toMatch(
      /to be absent/,
    );
    expect(compare({ ...base, response: { statusCode: 404 } }, got)).toMatch(
      /expected status code one of 404, got 200/,
    );
  });

  it('compares a redirect by its Location', () => {
    const redirect = { status: 302, headers: { location: 'http://example.org/hostname-redirect' }, body: '' };
    const expected = {
      request: { path: '/hostname-redirect' },
      response: { statusCode: 302 },
      redirectRequest: { host: 'example.org' },
    };
    expect(compare(expected, redirect)).toBeNull();
    expect(compare({ ...expected, redirectRequest: { host: 'example.net' } }, redirect)).toMatch(/redirect host/);
    expect(
      compare(expected, { ...redirect, headers: { location: 'http://example.org:8080/hostname-redirect' } }),
    ).toMatch(/no redirect port/);
  });
});

describe('the ConformanceReport', () => {
  const inventory: Inventory = {
    tag: 'v1.6.1',
    profiles: {
      'GATEWAY-HTTP': {
        core: ['Gateway', 'HTTPRoute', 'ReferenceGrant'],
        extended: ['HTTPRouteMethodMatching', 'HTTPRouteCORS'],
      },
    },
    tests: [
      {
        name: 'A',
        source: 'a.go',
        features: ['Gateway', 'HTTPRoute'],
        core: true,
        profiles: ['GATEWAY-HTTP'],
        manifests: [],
        provisional: false,
      },
      {
        name: 'B',
        source: 'b.go',
        features: ['Gateway', 'HTTPRoute'],
        core: true,
        profiles: ['GATEWAY-HTTP'],
        manifests: [],
        provisional: false,
      },
      {
        name: 'C',
        source: 'c.go',
        features: ['Gateway'],
        core: true,
        profiles: ['GATEWAY-HTTP'],
        manifests: [],
        provisional: false,
      },
      {
        name: 'M',
        source: 'm.go',
        features: ['Gateway', 'HTTPRoute', 'HTTPRouteMethodMatching'],
        core: false,
        profiles: ['GATEWAY-HTTP'],
        manifests: [],
        provisional: true,
      },
      {
        name: 'X',
        source: 'x.go',
        features: ['Gateway', 'HTTPRouteCORS'],
        core: false,
        profiles: ['GATEWAY-HTTP'],
        manifests: [],
        provisional: false,
      },
    ],
  };

  it('counts core and extended, lists failed and skipped tests, and leaves out tests of unclaimed features', () => {
    const text = conformanceReport(
      inventory,
      new Map([
        ['A', { result: 'passed' as const }],
        ['B', { result: 'failed' as const }],
        ['C', { result: 'skipped' as const, reason: 'not transcribed' }],
        ['M', { result: 'passed' as const }],
        ['X', { result: 'notSupported' as const, reason: 'extended features not claimed: HTTPRouteCORS' }],
      ]),
      new Set(['HTTPRouteMethodMatching']),
      { version: '0.1.0', date: new Date('2026-12-05T01:00:00Z'), profiles: ['GATEWAY-HTTP'] },
    );
    expect(text).toContain('# Skipped tests and why:\n#   C: not transcribed\n# Not run');
    expect(text).toContain('#   X: extended features not claimed: HTTPRouteCORS');
    expect(text).toContain(`apiVersion: gateway.networking.k8s.io/v1
kind: ConformanceReport`);
    expect(text).toContain(`  - name: GATEWAY-HTTP
    summary: Core tests failed with 1 test failures. Extended tests succeeded.
    core:
      result: failure
      statistics:
        Passed: 1
        Skipped: 1
        Failed: 1
      skippedTests:
        - C
      failedTests:
        - B
    extended:
      result: success
      statistics:
        Passed: 1
        Skipped: 0
        Failed: 0
      supportedFeatures:
        - HTTPRouteMethodMatching
      unsupportedFeatures:
        - HTTPRouteCORS`);
    expect(text).toContain('date: 2026-12-05T01:00:00Z');
    expect(text).toContain('gatewayAPIVersion: v1.6.1');
    // the provisional tests that passed, after the profiles
    expect(text).toMatch(/\nsucceededProvisionalTests:\n {2}- M\n$/);
  });
});

describe('what the report says is not claimed, measured', () => {
  it('HTTPRouteBackendProtocolH2C: this nginx refuses proxy_http_version 2 (HTTP/1.x to backends only)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ia-h2c-'));
    try {
      await writeFile(
        join(dir, 'nginx.conf'),
        `pid ${dir}/nginx.pid;\nerror_log stderr;\nevents {}\nhttp { server { listen 127.0.0.1:1; location / { proxy_http_version 2; proxy_pass http://127.0.0.1:2; } } }\n`,
      );
      const run = spawnSync(nginxBinary(), ['-t', '-p', `${dir}/`, '-c', join(dir, 'nginx.conf')], {
        encoding: 'utf8',
      });
      expect(run.status).not.toBe(0);
      expect(run.stderr).toContain('invalid value "2"');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the HTTPS round trip's certificate name check (Go's VerifyHostname)", () => {
  const cert = { subjectaltname: 'DNS:*, DNS:*.org, DNS:*.wildcard.org, IP Address:127.0.0.9' } as PeerCertificate;
  it.each([
    ['example.org', true],
    ['Example.ORG.', true],
    ['third.wildcard.org', true],
    ['a.b.org', false],
    ['org', true],
    ['example.com', false],
    ['127.0.0.9', true],
    ['127.0.0.1', false],
  ])('%s: %s', (host, valid) => {
    expect(goVerifyHostname(host, cert) === undefined).toBe(valid);
  });
});

describe('the static-address overlay (apply.go prepareGateway)', () => {
  it('replaces the placeholders with the unusable then the usable address, after the fake-type entry', async () => {
    const text = await readFile(new URL('./manifests/gateway-static-addresses.yaml', import.meta.url), 'utf8');
    const docs = parseAllDocuments(overlayAddresses(text)).map((d) => d.toJSON());
    expect(docs).toHaveLength(1);
    expect(docs[0].spec.addresses).toEqual([
      { type: 'test/fake-invalid-type', value: 'fake address teehee!' },
      { type: 'IPAddress', value: UNUSABLE_ADDRESS },
      { type: 'IPAddress', value: USABLE_ADDRESS },
    ]);
    expect(docs[0].spec.listeners).toHaveLength(1);
  });

  it('leaves a manifest without placeholders as it is', () => {
    expect(overlayAddresses('kind: Gateway\n')).toBe('kind: Gateway\n');
  });
});

describe("echo-basic's TCP and UDP servers, coredns, and the suite's clients for them", () => {
  const pods: EchoPod[] = [];
  let ca: string;
  afterAll(() => Promise.all(pods.map((p) => p.close())));
  beforeAll(async () => {
    const authority = await issueCertificate({ commonName: 'plumbing CA', isCa: true });
    const leaf = await issueCertificate({
      commonName: 'abc.example.com',
      dnsNames: ['abc.example.com'],
      issuer: authority,
    });
    ca = authority.certPem;
    const ports = { tcp: await freePort(), tls: await freePort() };
    const labels = { app: 'tcp-backend' };
    const tls = { cert: leaf.certPem, key: leaf.keyPem };
    pods.push(await startTcpEchoPod('127.0.0.2', ports, 'tcp-backend-abc12-xyz34', 'ns', '', labels, tls));
    pods.push(
      await startUdpEchoPod('127.0.0.3', await freePort(), 'udp-backend-v1-abc12-xyz34', 'ns', 'udp-backend-v1', {}),
    );
    pods.push(await startCorednsPod('127.0.0.4', await freePort(), 'coredns-abc12-xyz34', 'ns', { app: 'udp' }));
  });
  const timing = { threshold: 3, maxMs: 3_000, delayMs: 100 };

  it('TCP: welcome, PONG, IS_TLS and TEST; over TLS the SNI the client sent', async () => {
    const tcp = pods[0]!;
    const plain = tcp.targets!.find((t) => t.targetPort === 3000)!;
    const secure = tcp.targets!.find((t) => t.targetPort === 8443)!;
    await expectTcpEventually(
      { host: tcp.ip, port: plain.port },
      undefined,
      { backend: 'tcp-backend', namespace: 'ns' },
      timing,
    );
    await expectTcpEventually(
      { host: tcp.ip, port: secure.port },
      { serverName: 'abc.example.com', ca },
      { backendIsTls: true, backend: 'tcp-backend', namespace: 'ns', hostname: 'abc.example.com' },
      timing,
    );
    await expect(tcpEchoSendOnce({ host: tcp.ip, port: plain.port }, 2_000)).resolves.toBe('tcp-backend-abc12-xyz34');
    // a wrong answer is a failure at once, not a retry; another pod's name, another SNI
    await expect(
      expectTcpEventually(
        { host: tcp.ip, port: plain.port },
        undefined,
        { backend: 'udp-backend', namespace: 'ns' },
        timing,
      ),
    ).rejects.toThrow('backend name does not match');
    await expect(
      expectTcpEventually(
        { host: tcp.ip, port: secure.port },
        { serverName: 'abc.example.com', ca },
        { backendIsTls: false, backend: 'tcp-backend', namespace: 'ns' },
        timing,
      ),
    ).rejects.toThrow('IS_TLS answered true');
  });

  it('UDP: one datagram answered with the request, the Service and the pod', async () => {
    const udp = pods[1]!;
    await expect(udpEchoSendOnce({ host: udp.ip, port: udp.port }, 2_000)).resolves.toBe('udp-backend-v1-abc12-xyz34');
    await expectUdpEcho({ host: udp.ip, port: udp.port }, 3_000, 100, { service: 'udp-backend-v1', namespace: 'ns' });
    await expect(
      expectUdpEcho({ host: udp.ip, port: udp.port }, 1_000, 100, { service: 'udp-backend-v2' }),
    ).rejects.toThrow('service udp-backend-v1, want udp-backend-v2');
  });

  it("coredns: whoami for foo.bar.com (the client's address and port), SERVFAIL elsewhere, no reply to a non-query", async () => {
    const dns = pods[2]!;
    await dnsExchange({ host: dns.ip, port: dns.port }, 'foo.bar.com.', 2_000);
    const { id, message } = dnsQuery('foo.bar.com.');
    const reply = corednsReply(message, '127.0.0.9', 5353)!;
    checkDnsReply(reply, id);
    expect([reply.readUInt16BE(6), reply.readUInt16BE(10)]).toEqual([0, 2]);
    // the A record after the question: its name (foo.bar.com, 13 bytes), type, class, TTL and length (10), the address
    expect([...reply.subarray(message.length + 23, message.length + 27)]).toEqual([127, 0, 0, 9]);
    expect(reply.readUInt16BE(reply.length - 3)).toBe(5353);
    const other = corednsReply(dnsQuery('example.org.').message, '127.0.0.9', 5353)!;
    expect(other[3]! & 0x0f).toBe(2);
    expect(() => checkDnsReply(reply, (id + 1) % 0x10000)).toThrow('id mismatch');
    expect(corednsReply(Buffer.from('gateway-api-conformance-udp-echo'), '127.0.0.9', 5353)).toBeNull();
  });

  it("a Service's slice has each port the pods stand for, by targetPort and protocol", () => {
    const services = [
      {
        metadata: { name: 'tcp-backend', namespace: 'ns' },
        spec: {
          selector: { app: 'tcp-backend' },
          ports: [
            { name: 'echo-tcp-plain', port: 3000, targetPort: 3000 },
            { name: 'echo-tcp-tls', port: 8443, targetPort: 8443 },
            { name: 'udp', port: 3000, protocol: 'UDP' },
          ],
        },
      },
    ];
    const [slice] = endpointSlicesFor(services, pods) as {
      ports: { name: string; port: number; protocol: string }[];
    }[];
    expect(slice?.ports).toEqual(
      pods[0]!.targets!.map((t, i) => ({ name: ['echo-tcp-plain', 'echo-tcp-tls'][i], port: t.port, protocol: 'TCP' })),
    );
  });
});
