import { beforeAll, describe, expect, it } from 'vitest';
import { AdmissionJudge, warningOnly, type AdmissionOperation } from '../../src/model/admission.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { Ingress } from '../../src/model/snapshot.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';

const old = (i: Ingress, at: string): Ingress => ({ ...i, metadata: { ...i.metadata, creationTimestamp: at } });

const first = old(ingress('first', { 'a.example.com': [{ path: '/', service: 'app' }] }), '2024-01-01T00:00:00Z');
const base = [ingressClass(), ...serviceWithEndpoints('app', [{ port: 8081 }]), first];
const snippetsAllowed = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'ingress-nginx-controller', namespace: 'ingress-nginx' },
  data: { 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' },
};
const options = { build: { ...defaultBuildOptions, configMap: 'ingress-nginx/ingress-nginx-controller' } };

let certificate: { certPem: string; keyPem: string };
beforeAll(async () => {
  certificate = await issueCertificate({ commonName: 'other.example.com', dnsNames: ['other.example.com'] });
});

interface Case {
  name: string;
  candidate: () => Ingress;
  operation?: AdmissionOperation;
  extra?: () => object[];
  allowed: boolean;
  /** the denial's message, whole */
  message?: string;
  /** a warning containing this */
  warning?: string;
}

const cases: Case[] = [
  {
    name: 'a good new Ingress',
    candidate: () => ingress('second', { 'b.example.com': [{ path: '/', service: 'app' }] }),
    allowed: true,
  },
  {
    name: 'an invalid annotation value',
    candidate: () =>
      ingress(
        'second',
        { 'b.example.com': [{ path: '/', service: 'app' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/proxy-connect-timeout': '10s; evil' } },
      ),
    allowed: false,
    message: 'default/second: metadata.annotations.nginx.ingress.kubernetes.io/proxy-connect-timeout: ',
  },
  {
    name: 'an invalid host',
    candidate: () => ingress('second', { 'b.example.com;': [{ path: '/', service: 'app' }] }),
    allowed: false,
    message: 'default/second: spec.rules[0].host: ',
  },
  {
    name: 'a snippet the policy refuses',
    candidate: () =>
      ingress(
        'second',
        { 'b.example.com': [{ path: '/', service: 'app' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/configuration-snippet': 'content_by_lua_block { os.exit() }' } },
      ),
    extra: () => [snippetsAllowed],
    allowed: false,
    message: 'default/second: metadata.annotations.nginx.ingress.kubernetes.io/configuration-snippet: ',
  },
  {
    name: 'a snippet while snippets are disabled',
    candidate: () =>
      ingress(
        'second',
        { 'b.example.com': [{ path: '/', service: 'app' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/configuration-snippet': 'more_set_headers "X: y";' } },
      ),
    allowed: false,
    message: 'default/second: metadata.annotations.nginx.ingress.kubernetes.io/configuration-snippet: ',
  },
  {
    name: 'an annotation above annotations-risk-level',
    candidate: () =>
      ingress(
        'second',
        { 'b.example.com': [{ path: '/', service: 'app' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/upstream-hash-by': '$request_uri' } },
      ),
    extra: () => [{ ...snippetsAllowed, data: { 'annotations-risk-level': 'Medium' } }],
    allowed: false,
    message: 'default/second: metadata.annotations.nginx.ingress.kubernetes.io/upstream-hash-by: ',
  },
  {
    name: 'a host and path an older Ingress serves',
    candidate: () => ingress('second', { 'a.example.com': [{ path: '/', service: 'app' }] }),
    allowed: false,
    message:
      'default/second: spec.rules[0].http.paths[0].path: host "a.example.com" and path "/" is already defined in ' +
      'ingress default/first',
  },
  {
    name: 'a canary on the host and path an older Ingress serves',
    candidate: () =>
      ingress(
        'second',
        { 'a.example.com': [{ path: '/', service: 'app' }] },
        {
          annotations: {
            'nginx.ingress.kubernetes.io/canary': 'true',
            'nginx.ingress.kubernetes.io/canary-weight': '10',
          },
        },
      ),
    allowed: true,
  },
  {
    name: 'the same host with another path',
    candidate: () => ingress('second', { 'a.example.com': [{ path: '/api', service: 'app' }] }),
    allowed: true,
  },
  {
    name: 'an update of the Ingress that serves the path',
    operation: 'UPDATE',
    candidate: () =>
      old(
        ingress('first', {
          'a.example.com': [
            { path: '/', service: 'app' },
            { path: '/v2', service: 'app' },
          ],
        }),
        '2024-01-01T00:00:00Z',
      ),
    allowed: true,
  },
  {
    name: "another class's Ingress, however bad",
    candidate: () => {
      const bad = ingress('second', { 'a.example.com;': [{ path: '/', service: 'app' }] });
      return { ...bad, spec: { ...bad.spec, ingressClassName: 'other' } };
    },
    extra: () => [ingressClass('other', 'example.com/other')],
    allowed: true,
  },
  {
    name: 'a TLS Secret invalid for the host (ingress-nginx admits it; the default certificate serves)',
    candidate: () =>
      ingress(
        'second',
        { 'b.example.com': [{ path: '/', service: 'app' }] },
        { tls: [{ hosts: ['b.example.com'], secretName: 'other-cert' }] },
      ),
    extra: () => [tlsSecret('other-cert', certificate.certPem, certificate.keyPem)],
    allowed: true,
    warning: 'default/second: spec.tls[0]',
  },
  {
    name: 'a Service not created yet (kubectl apply -f dir/ in any order)',
    candidate: () => ingress('second', { 'b.example.com': [{ path: '/', service: 'later' }] }),
    allowed: true,
    warning: 'Service default/later not found',
  },
  {
    name: 'an unknown annotation (ignored)',
    candidate: () =>
      ingress(
        'second',
        { 'b.example.com': [{ path: '/', service: 'app' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/proxy-conect-timeout': '10' } },
      ),
    allowed: true,
    warning: 'did you mean',
  },
  {
    name: 'a delete',
    operation: 'DELETE',
    candidate: () => ingress('second', { 'a.example.com;': [{ path: '/', service: 'app' }] }),
    allowed: true,
  },
];

describe('the admission judge', () => {
  for (const c of cases) {
    it(c.name, () => {
      const snapshot = snapshotOf([...base, ...(c.extra?.() ?? [])]);
      const verdict = new AdmissionJudge().judge(snapshot, options, c.operation ?? 'CREATE', c.candidate());
      expect(verdict.allowed, verdict.message).toBe(c.allowed);
      if (c.message !== undefined) {
        if (c.message.endsWith(': ')) expect(verdict.message.startsWith(c.message), verdict.message).toBe(true);
        else expect(verdict.message).toBe(c.message);
      }
      if (c.warning !== undefined) expect(verdict.warnings.join('\n')).toContain(c.warning);
      if (c.allowed) expect(verdict.message).toBe('');
    });
  }

  it('one judge, many judgements: each sees only the snapshot and its own candidate', () => {
    const judge = new AdmissionJudge();
    const snapshot = snapshotOf(base);
    const bad = ingress('second', { 'a.example.com': [{ path: '/', service: 'app' }] });
    const good = ingress('third', { 'c.example.com': [{ path: '/', service: 'app' }] });
    expect(judge.judge(snapshot, options, 'CREATE', bad).allowed).toBe(false);
    expect(judge.judge(snapshot, options, 'CREATE', good).allowed).toBe(true);
    expect(judge.judge(snapshot, options, 'CREATE', bad).allowed).toBe(false);
    // The older Ingress moved away: the same candidate is now fine.
    const moved = old(ingress('first', { 'z.example.com': [{ path: '/', service: 'app' }] }), '2024-01-01T00:00:00Z');
    expect(judge.judge(snapshotOf([...base.slice(0, -1), moved]), options, 'CREATE', bad).allowed).toBe(true);
  });

  it('a candidate older than the Ingress it collides with wins the path, and is admitted as ingress-nginx does', () => {
    const candidate = old(
      ingress('older', { 'a.example.com': [{ path: '/', service: 'app' }] }),
      '2020-01-01T00:00:00Z',
    );
    expect(new AdmissionJudge().judge(snapshotOf(base), options, 'UPDATE', candidate).allowed).toBe(true);
  });

  it('--watch-namespace: an Ingress elsewhere is not looked at', () => {
    const bad = ingress('second', { 'a.example.com;': [{ path: '/', service: 'app' }] }, { namespace: 'elsewhere' });
    const judge = new AdmissionJudge();
    expect(judge.judge(snapshotOf(base), { ...options, watchNamespace: 'default' }, 'CREATE', bad).allowed).toBe(true);
    expect(judge.judge(snapshotOf(base), options, 'CREATE', bad).allowed).toBe(false);
  });
});

describe('warningOnly: which problems of the candidate only warn', () => {
  const annotation = (key: string, message: string) => ({
    kind: 'Ingress',
    namespace: 'default',
    name: 'x',
    field: `metadata.annotations.nginx.ingress.kubernetes.io/${key}`,
    message,
  });
  it.each([
    // Invalid values deny, whatever serving does with them (left out, ignored with the default, 503, filtered).
    [annotation('proxy-read-timeout', '"soon" is not a duration; Ingress left out'), false],
    [annotation('proxy-read-timeout', '"soon" is not a duration; ignored, the default applies'), false],
    [annotation('auth-url', '"x" is not a URL; its locations answer 503'), false],
    [annotation('cors-allow-origin', '"x" is not an origin; dropped, the valid entries are kept'), false],
    [annotation('configuration-snippet', 'snippets are disabled: …; ignored'), false],
    [annotation('auth-url', 'is High risk, above annotations-risk-level Medium (…); ignored'), false],
    // Understood and ignored by design, or unknown: admitted, as ingress-nginx admits them.
    [annotation('canary-weight', 'has no effect without canary: "true"; ignored'), true],
    [annotation('enable-opentelemetry', 'is not supported (no OpenTelemetry module); ignored'), true],
    [
      { ...annotation('x', ''), field: 'spec.rules[0].host', message: '"a;" is not a valid host; rule left out' },
      false,
    ],
    [
      {
        ...annotation('x', ''),
        field: 'spec.rules[0].http.paths[0].backend.service.name',
        message: 'Service default/later not found; answering 503',
      },
      true,
    ],
    [
      {
        ...annotation('x', ''),
        field: 'spec.rules[0].http.paths[1].backend.resource',
        message: 'not a Service: left out, as ingress-nginx does, so its requests reach what else matches',
      },
      true,
    ],
  ])('%o → %s', (problem, warns) => expect(warningOnly(problem)).toBe(warns));
});
