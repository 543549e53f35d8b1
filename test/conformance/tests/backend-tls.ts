/**
 * BackendTLSPolicy tests of gateway-api v1.6.1 conformance/tests (Apache-2.0), transcribed as data
 * (backendtlspolicy.go, backendtlspolicy-conflict-resolution.go, -invalid-ca-certificate-ref.go, -invalid-kind.go,
 * -observed-generation-bump.go). backendtlspolicy-san.go (BackendTLSPolicySANValidation) is not transcribed: nginx
 * 1.22 checks a backend certificate against one name, the one it sends as SNI, so URI subjectAltNames cannot be
 * checked and the feature is not claimed.
 */
import type { Harness } from '../harness.js';
import type { ExpectedResponse } from '../http.js';
import { type ConformanceCase, type Cond, type NN, runSteps, type Step } from '../steps.js';
import { INFRA, SAME_NS } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const HTTPS_GW = infra('same-namespace-with-https-listener');
const ACCEPTED: Cond = { type: 'Accepted', status: 'True', reason: 'Accepted' };
const RESOLVED: Cond = { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' };
const NO_VALID_CA: Cond = { type: 'Accepted', status: 'False', reason: 'NoValidCACertificate' };
const INVALID_CA_REF: Cond = { type: 'ResolvedRefs', status: 'False', reason: 'InvalidCACertificateRef' };
const CONFLICTED: Cond = { type: 'Accepted', status: 'False', reason: 'Conflicted' };

const policy = (name: string, conditions: Cond[], gateway = SAME_NS): Step[] =>
  conditions.map((condition) => ({ kind: 'policyCondition', policy: infra(name), gateway, condition }));

/** opening: GatewayAndRoutesMustBeAccepted, then HTTPRouteMustHaveResolvedRefsConditionsTrue */
const opening = (route: string, gateway = SAME_NS): Step[] => [
  { kind: 'namespaceReady', namespace: INFRA },
  { kind: 'accepted', gateway, routes: [infra(route)] },
  {
    kind: 'routeCondition',
    route: infra(route),
    gateway,
    condition: { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' },
  },
];

const ok = (path: string, host = 'abc.example.com', sni?: string): ExpectedResponse => ({
  request: { host, path, ...(sni ? { sni } : {}) },
  namespace: INFRA,
  response: { statusCode: 200 },
});

const kubectl = (h: Harness, ...args: string[]) => h.kubectl.run(args);
const POLICIES = 'backendtlspolicies.gateway.networking.k8s.io';

/** patchPolicyCa points BackendTLSPolicy reconcile-test at the ConfigMap `name` (a merge patch, as client.MergeFrom). */
const patchPolicyCa = (name: string): Step => ({
  kind: 'client',
  what: `BackendTLSPolicy reconcile-test uses ConfigMap ${name}`,
  run: (h) =>
    kubectl(
      h,
      'patch',
      POLICIES,
      'reconcile-test',
      '-n',
      INFRA,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name }] } } }),
    ),
});

const TEST_CM = 'tls-checks-ca-certificate-reconcile-test';
/** the shared CA's PEM, read at the start of the reconcile subtest (originalCAData) */
let originalCa = '';
const patchTestCa = (data: () => string): Step => ({
  kind: 'client',
  what: `ConfigMap ${TEST_CM} ca.crt patched`,
  run: (h) =>
    kubectl(
      h,
      'patch',
      'configmap',
      TEST_CM,
      '-n',
      INFRA,
      '--type=merge',
      '-p',
      JSON.stringify({ data: { 'ca.crt': data() } }),
    ),
});

/** for each invalid policy of a manifest: Accepted and ResolvedRefs False, and its backend answered 5xx */
const invalidPolicy = (name: string, resolved: Cond): Step[] => [
  ...policy(name, [NO_VALID_CA, resolved]),
  {
    kind: 'requests',
    gateway: SAME_NS,
    cases: [
      {
        request: { host: 'abc.example.com', path: `/backendtlspolicy-${name}` },
        namespace: INFRA,
        response: { statusCodes: [500, 502, 503] },
      },
    ],
  },
];

export const backendTlsCases: ConformanceCase[] = [
  {
    name: 'BackendTLSPolicy',
    steps: [
      // Re-encrypt HTTPS request sent to Service with valid BackendTLSPolicy should succeed
      ...opening('backendtlspolicy-reencrypt', HTTPS_GW),
      ...policy('normative-test', [ACCEPTED, RESOLVED], HTTPS_GW),
      {
        kind: 'requests',
        gateway: HTTPS_GW,
        scheme: 'https',
        cases: [
          {
            request: { host: 'https-listener.org', path: '/backendtlspolicy', sni: 'https-listener.org' },
            expectedRequest: { path: '/backendtlspolicy', sni: 'abc.example.com' },
            namespace: INFRA,
            response: { statusCode: 200 },
          },
        ],
      },
      ...opening('backendtlspolicy'),
      // HTTP request sent to Service with valid BackendTLSPolicy should succeed
      ...policy('normative-test', [ACCEPTED, RESOLVED]),
      { kind: 'requests', gateway: SAME_NS, cases: [ok('/backendtlspolicy', 'abc.example.com', 'abc.example.com')] },
      // … with mismatched hostname should return an HTTP error
      ...policy('host-mismatch', [ACCEPTED, RESOLVED]),
      {
        kind: 'failures',
        gateway: SAME_NS,
        cases: [
          { request: { host: 'abc.example.org', path: '/backendtlspolicy-host-mismatch', sni: 'abc.example.com' } },
        ],
      },
      // … with mismatched cert should return HTTP error
      ...policy('cert-mismatch', [ACCEPTED, RESOLVED]),
      {
        kind: 'failures',
        gateway: SAME_NS,
        cases: [
          { request: { host: 'abc.example.com', path: '/backendtlspolicy-cert-mismatch', sni: 'abc.example.com' } },
        ],
      },
      // Changing the content of a ConfigMap used by BackendTLSPolicy as CA certificate should be reconciled
      ...policy('reconcile-test', [ACCEPTED, RESOLVED]),
      {
        kind: 'client',
        what: 'the shared ConfigMap tls-checks-ca-certificate read',
        run: async (h) => {
          const cm = (await h.get('v1', 'ConfigMap', INFRA, 'tls-checks-ca-certificate')) as {
            data?: Record<string, string>;
          } | null;
          originalCa = cm?.data?.['ca.crt'] ?? '';
          if (originalCa === '') throw new Error('failed to get shared configmap');
        },
      },
      patchPolicyCa(TEST_CM),
      ...policy('reconcile-test', [NO_VALID_CA, INVALID_CA_REF]),
      {
        kind: 'client',
        what: `ConfigMap ${TEST_CM} created with the shared CA`,
        run: (h) =>
          h.kubectl.run(
            ['apply', '-f', '-'],
            JSON.stringify({
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: TEST_CM, namespace: INFRA },
              data: { 'ca.crt': originalCa },
            }),
          ),
      },
      ...policy('reconcile-test', [ACCEPTED, RESOLVED]),
      patchTestCa(() => ''),
      ...policy('reconcile-test', [NO_VALID_CA, INVALID_CA_REF]),
      patchTestCa(() => originalCa),
      ...policy('reconcile-test', [ACCEPTED, RESOLVED]),
      patchPolicyCa('tls-checks-ca-certificate'),
      // MustApplyObjectsWithCleanup: the test's ConfigMap goes at the end
      { kind: 'delete', resource: 'configmap', namespace: INFRA, name: TEST_CM },
    ],
  },
  {
    name: 'BackendTLSPolicyConflictResolution',
    steps: [
      ...opening('backendtlspolicy-conflict-resolution'),
      ...policy('conflicted-without-section-name-1', [ACCEPTED]),
      ...policy('conflicted-without-section-name-2', [CONFLICTED]),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [ok('/backendtlspolicy-conflicted-without-section-name', 'abc.example.com', 'other.example.com')],
      },
      ...policy('conflicted-with-section-name-1', [ACCEPTED]),
      ...policy('conflicted-with-section-name-2', [CONFLICTED]),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [ok('/backendtlspolicy-conflicted-with-section-name', 'abc.example.com', 'other.example.com')],
      },
      ...policy('not-conflicted-with-section-name', [ACCEPTED]),
      ...policy('not-conflicted-without-section-name', [ACCEPTED]),
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [ok('/backendtlspolicy-not-conflicted-with-section-name', 'abc.example.com', 'other.example.com')],
      },
      {
        kind: 'requests',
        gateway: SAME_NS,
        cases: [ok('/backendtlspolicy-not-conflicted-without-section-name', 'abc.example.com', 'abc.example.com')],
      },
    ],
  },
  {
    name: 'BackendTLSPolicyInvalidCACertificateRef',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('backendtlspolicy-invalid-ca-certificate-ref')] },
      ...invalidPolicy('nonexistent-ca-certificate-ref', INVALID_CA_REF),
      ...invalidPolicy('malformed-ca-certificate-ref', INVALID_CA_REF),
    ],
  },
  {
    name: 'BackendTLSPolicyInvalidKind',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      { kind: 'accepted', gateway: SAME_NS, routes: [infra('backendtlspolicy-invalid-kind-test')] },
      ...invalidPolicy('invalid-kind', { type: 'ResolvedRefs', status: 'False', reason: 'InvalidKind' }),
    ],
  },
  {
    name: 'BackendTLSPolicyObservedGenerationBump',
    steps: [
      { kind: 'namespaceReady', namespace: INFRA },
      { kind: 'policyLatest', policy: infra('observed-generation-bump') },
      {
        kind: 'client',
        what: 'the policy hostname patched to foo.example.com',
        run: async (h) => {
          const before = await h.get(
            'gateway.networking.k8s.io/v1',
            'BackendTLSPolicy',
            INFRA,
            'observed-generation-bump',
          );
          await kubectl(
            h,
            'patch',
            POLICIES,
            'observed-generation-bump',
            '-n',
            INFRA,
            '--type=merge',
            '-p',
            JSON.stringify({ spec: { validation: { hostname: 'foo.example.com' } } }),
          );
          const after = await h.get(
            'gateway.networking.k8s.io/v1',
            'BackendTLSPolicy',
            INFRA,
            'observed-generation-bump',
          );
          if (after?.metadata?.generation === before?.metadata?.generation)
            throw new Error('generation should change after an update');
        },
      },
      ...policy('observed-generation-bump', [{ type: 'Accepted', status: 'True' }]),
      { kind: 'policyLatest', policy: infra('observed-generation-bump') },
    ],
  },
  {
    name: 'GatewayTLSBackendClientCertificate',
    steps: [
      ...opening('gateway-tls-backend-client-certificate', infra('gateway-tls-backend-client-certificate')),
      ...policy(
        'gateway-tls-backend-client-certificate-test',
        [ACCEPTED],
        infra('gateway-tls-backend-client-certificate'),
      ),
      {
        kind: 'gatewayCondition',
        gateway: infra('gateway-tls-backend-client-certificate'),
        condition: { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' },
      },
      {
        kind: 'client',
        what: 'the request reaches the TLS backend with the client certificate of Secret tls-checks-client-certificate',
        run: async (h, t) => {
          const secret = (await h.get('v1', 'Secret', INFRA, 'tls-checks-client-certificate')) as {
            data?: Record<string, string>;
          } | null;
          const clientCert = Buffer.from(secret?.data?.['tls.crt'] ?? '', 'base64').toString('utf8');
          if (clientCert === '') throw new Error('missing required server certificate pem for the test');
          await runSteps(
            h,
            [
              {
                kind: 'requests',
                gateway: infra('gateway-tls-backend-client-certificate'),
                cases: [
                  {
                    request: { host: 'abc.example.com', path: '/', sni: 'abc.example.com' },
                    expectedRequest: { path: '/', sni: 'abc.example.com', clientCert },
                    namespace: INFRA,
                    response: { statusCodes: [200] },
                  },
                ],
              },
            ],
            t,
          );
        },
      },
    ],
  },
  {
    name: 'GatewayInvalidTLSBackendConfiguration',
    steps: (
      [
        ['gateway-client-certificate-nonexistent-secret', 'InvalidClientCertificateRef'],
        ['gateway-client-certificate-unsupported-group', 'InvalidClientCertificateRef'],
        ['gateway-client-certificate-unsupported-kind', 'InvalidClientCertificateRef'],
        ['gateway-client-certificate-malformed-secret', 'InvalidClientCertificateRef'],
        ['gateway-client-certificate-missing-reference-grant', 'RefNotPermitted'],
      ] as const
    ).flatMap(([name, reason]): Step[] => [
      { kind: 'latest', objectKind: 'Gateway', object: infra(name) },
      { kind: 'gatewayCondition', gateway: infra(name), condition: { type: 'ResolvedRefs', status: 'False', reason } },
      {
        kind: 'gatewayCondition',
        gateway: infra(name),
        condition: { type: 'Accepted', status: 'True', reason: 'Accepted' },
      },
    ]),
  },
];
