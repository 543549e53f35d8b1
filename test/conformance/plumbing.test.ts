/**
 * The conformance suite's own parts, without a controller: an echo pod answers as echo-basic does and the
 * comparison (CompareRoundTrip) accepts what matches and names what does not; the report counts as reports.go does.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nginxBinary } from '../../src/nginx/binary.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { freePort } from '../support/net.js';
import { startEchoPod, type EchoPod } from './echo.js';
import { overlayAddresses, UNUSABLE_ADDRESS, USABLE_ADDRESS } from './harness.js';
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
