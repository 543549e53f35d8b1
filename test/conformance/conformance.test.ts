/**
 * The Gateway API conformance tests of gateway-api (the version in inventory.json), ported: each test's manifests
 * applied to the test API server, its waits and requests (tests/*.ts, transcribed from the Go tests) through the
 * real controller and nginx, then its manifests deleted. Writes the ConformanceReport to $CONFORMANCE_REPORT or
 * tmp/conformance-report.yaml. Tests not transcribed yet are skipped with the reason.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTROLLER_NAME, GATEWAY_CLASS, INFRA_NS, startHarness, type Harness } from './harness.js';
import { conformanceReport, type Inventory, type Outcome } from './report.js';
import { runSteps, type ConformanceCase, type Timeouts } from './steps.js';
import { gatewayCases } from './tests/gateway.js';
import { grpcCases } from './tests/grpcroute.js';
import { extendedCases } from './tests/httproute-extended.js';
import { hostCases } from './tests/httproute-hosts.js';
import { invalidCases } from './tests/httproute-invalid.js';
import { l4Cases } from './tests/l4.js';
import { l4TrafficCases } from './tests/l4-traffic.js';
import { routingCases } from './tests/httproute-routing.js';
import { httpFeatureCases } from './tests/http-features.js';
import { backendTlsCases } from './tests/backend-tls.js';
import { tlsTerminateCases } from './tests/tls-terminate.js';
import { listenerSetCases } from './tests/listenerset.js';

const inventory = JSON.parse(await readFile(new URL('./inventory.json', import.meta.url), 'utf8')) as Inventory;
const cases = new Map<string, ConformanceCase>(
  [
    ...routingCases,
    ...hostCases,
    ...invalidCases,
    ...gatewayCases,
    ...extendedCases,
    ...grpcCases,
    ...httpFeatureCases,
    ...l4Cases,
    ...l4TrafficCases,
    ...backendTlsCases,
    ...tlsTerminateCases,
    ...listenerSetCases,
  ].map((c) => [c.name, c]),
);
/**
 * the extended features this implementation claims (the report's supportedFeatures): those issue 20's data path
 * implements and whose tests are transcribed here; a test of any other extended feature is not run (Go:
 * NOT_SUPPORTED) and not counted
 */
const SUPPORTED_EXTENDED = new Set<string>([
  'HTTPRouteQueryParamMatching',
  'HTTPRouteMethodMatching',
  'HTTPRouteResponseHeaderModification',
  'HTTPRoutePathRewrite',
  'HTTPRouteHostRewrite',
  'HTTPRoutePathRedirect',
  'HTTPRoutePortRedirect',
  'HTTPRouteSchemeRedirect',
  'HTTPRoute303RedirectStatusCode',
  'HTTPRoute307RedirectStatusCode',
  'HTTPRoute308RedirectStatusCode',
  'HTTPRouteRequestTimeout',
  'HTTPRouteBackendTimeout',
  'HTTPRouteRequestMirror',
  'HTTPRouteRequestMultipleMirrors',
  // --gateway-addresses: a Gateway's spec.addresses IPAddress naming a pool address gets it
  'GatewayStaticAddresses',
  // --gateway-addresses: an IPAddress entry without value gets any free pool address
  'GatewayAddressEmpty',
  // a host's server serves only the most specific listener matching it (src/model/gateway/nginx.ts)
  'GatewayHTTPListenerIsolation',
  // issue 31's HTTP extended features (tests/http-features.ts)
  'GatewayPort8080',
  'HTTPRouteNamedRouteRule',
  'GRPCRouteNamedRouteRule',
  // Upgrade and Connection go to the backend as the client sent them (templates/partials/proxy-headers.hbs)
  'HTTPRouteBackendProtocolWebSocket',
  // the CORS filter: lua/ingress_actors/router.lua answers preflights and adds the headers
  'HTTPRouteCORS',
  // a backendRef's own RequestHeaderModifier filters, applied when the router picks it
  'HTTPRouteBackendRequestHeaderModification',
  // the router answers 421 when the TLS server name picks another listener than the Host header
  'GatewayHTTPSListenerDetectMisdirectedRequests',
  // a parentRef's port selects the listeners of that port (src/model/gateway/build.ts)
  'HTTPRouteParentRefPort',
  'HTTPRouteDestinationPortMatching',
  // RequestMirror's percent and fraction: the router draws each copy
  'HTTPRouteRequestPercentageMirror',
  // issue 31, TLS: TLS to backends with the policy's CA and hostname (src/model/gateway/backend-tls.ts)
  'BackendTLSPolicy',
  // a Gateway's spec.tls.backend.clientCertificateRef shown to TLS backends
  'GatewayBackendClientCertificate',
  // TLS listeners in Terminate mode: an internal ssl stream server per name, the listener's certificate as a file
  // (src/model/gateway/tls-terminate.ts), sharing a port with Passthrough listeners by SNI
  'TLSRouteModeTerminate',
  'TLSRouteModeMixed',
  // issue 31: listeners of a Gateway from ListenerSets it admits (src/model/gateway/listener-sets.ts)
  'ListenerSet',
]);
const PROFILES = ['GATEWAY-HTTP', 'GATEWAY-GRPC', 'GATEWAY-TLS', 'GATEWAY-TCP', 'GATEWAY-UDP'];
/** extended features of the profiles that are not claimed because nginx cannot do them, with what was measured */
const NOT_CLAIMED: Record<string, string> = {
  HTTPRouteBackendProtocolH2C:
    'nginx 1.22 proxies HTTP/1.0 and 1.1 only (`proxy_http_version 2` fails nginx -t: invalid value "2"); ' +
    'h2c to a backend is grpc_pass, for GRPCRoute',
  GatewayInfrastructurePropagation:
    'one nginx serves every Gateway (each on an address of --gateway-addresses): the controller makes no Pod, ' +
    "Service or ServiceAccount per Gateway to carry spec.infrastructure's labels and annotations",
  BackendTLSPolicySANValidation:
    "nginx 1.22 checks a backend certificate against one name, the one it sends as SNI (proxy_ssl_name): a policy's " +
    'subjectAltNames beyond it cannot be checked, so such a policy is refused (Accepted=False/Invalid)',
  GatewayFrontendClientCertificateValidation:
    'the tests expect the TLS handshake to fail without a valid client certificate; nginx 1.22 completes every ' +
    'handshake (ssl_verify_client) and answers 400 after it, so they cannot pass (the validation itself is served)',
  GatewayFrontendClientCertificateValidationInsecureFallback:
    'as GatewayFrontendClientCertificateValidation: nginx judges the certificate after the handshake',
  HTTPRouteRetry:
    "HTTPRoute rules' `retry` is an experimental-channel field in Gateway API v1.6.1: the standard CRDs prune it, " +
    'so a standard-channel report cannot test it',
};
/**
 * the committed report (docs/, the file gateway-api's conformance/reports/<version>/<implementation>/ expects): a run
 * of every test with no failure must have written the same, but for the date (UPDATE_CONFORMANCE_REPORT=1 writes it)
 */
const COMMITTED = (version: string) =>
  new URL(
    `../../docs/conformance/reports/${inventory.tag}/ingress-actors/standard-${version}-default-report.yaml`,
    import.meta.url,
  );
const REPORT = process.env.CONFORMANCE_REPORT ?? new URL('../../tmp/conformance-report.yaml', import.meta.url).pathname;

/** Go's defaults are 3 consecutive answers within 30 s and 60–180 s for status; a loopback cluster settles faster */
const timeouts: Timeouts = { threshold: 3, maxMs: 15_000, delayMs: 500, statusMs: 15_000, pollMs: 200 };
const outcomes = new Map<string, Outcome>();
let harness: Harness | undefined;
let setupError: Error | undefined;

beforeAll(async () => {
  try {
    harness = await startHarness();
    const h = harness;
    // conformance/utils/suite: the GatewayClass Accepted, and the base's Gateways Programmed (NamespacesMustBeReady)
    const deadline = Date.now() + 30_000;
    for (;;) {
      const problems: string[] = [];
      const gc = (await h.get('gateway.networking.k8s.io/v1', 'GatewayClass', '', GATEWAY_CLASS)) as {
        status?: { conditions?: { type: string; status: string }[] };
      } | null;
      if (!gc?.status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True'))
        problems.push(`GatewayClass ${GATEWAY_CLASS} (${CONTROLLER_NAME}) not Accepted`);
      for (const name of ['same-namespace', 'all-namespaces', 'backend-namespaces']) {
        const g = (await h.get('gateway.networking.k8s.io/v1', 'Gateway', INFRA_NS, name)) as {
          status?: { conditions?: { type: string; status: string }[] };
        } | null;
        if (!g?.status?.conditions?.some((c) => c.type === 'Programmed' && c.status === 'True'))
          problems.push(`Gateway ${name} not Programmed: ${JSON.stringify(g?.status?.conditions ?? [])}`);
      }
      if (problems.length === 0) break;
      if (Date.now() > deadline) throw new Error(`the base never became ready: ${problems.join('; ')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  } catch (error) {
    // every test then fails with this, as the Go suite fails at setup
    setupError = error as Error;
  }
}, 120_000);

afterAll(async () => {
  await harness?.close();
  const version = (
    JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
  await mkdir(dirname(REPORT), { recursive: true });
  await writeFile(
    REPORT,
    conformanceReport(inventory, outcomes, SUPPORTED_EXTENDED, {
      version,
      date: new Date(),
      profiles: PROFILES,
      notClaimed: NOT_CLAIMED,
    }),
  );
}, 60_000);

describe.sequential('Gateway API conformance', () => {
  for (const test of inventory.tests) {
    const transcribed = cases.get(test.name);
    const unsupported = test.features.filter(
      (f) => !SUPPORTED_EXTENDED.has(f) && !PROFILES.some((p) => inventory.profiles[p]?.core.includes(f)),
    );
    const notSupported =
      unsupported.length > 0 ? `extended features not claimed: ${unsupported.join(', ')}` : undefined;
    const skip = test.skip ?? notSupported ?? (transcribed ? undefined : 'not transcribed to this suite yet');
    if (skip) {
      outcomes.set(test.name, { result: test.skip || !notSupported ? 'skipped' : 'notSupported', reason: skip });
      it.skip(`${test.name} (${skip})`, () => {});
      continue;
    }
    it(test.name, async () => {
      try {
        if (setupError) throw setupError;
        const h = harness!;
        const files = test.manifests.map((m) => m.split('/').at(-1)!);
        for (const f of files) await h.apply(f);
        try {
          await runSteps(h, transcribed!.steps, timeouts);
        } finally {
          for (const f of files) await h.remove(f);
        }
        outcomes.set(test.name, { result: 'passed' });
      } catch (error) {
        outcomes.set(test.name, { result: 'failed' });
        throw error;
      }
    }, 300_000);
  }

  // Last, after every test: only a whole run (no -t filter) with no failure says what the committed report must say;
  // a failed test has failed already, so this adds no failure of its own to a flaky run.
  it('the committed report says what this run found', async () => {
    const whole = inventory.tests.every((t) => outcomes.has(t.name));
    if (!whole || [...outcomes.values()].some((o) => o.result === 'failed')) return;
    const version = (
      JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
    ).version;
    const produced = conformanceReport(inventory, outcomes, SUPPORTED_EXTENDED, {
      version,
      date: new Date(0),
      profiles: PROFILES,
      notClaimed: NOT_CLAIMED,
    });
    const file = COMMITTED(version);
    if (process.env.UPDATE_CONFORMANCE_REPORT) {
      await mkdir(dirname(file.pathname), { recursive: true });
      await writeFile(
        file,
        produced.replace(/^date: .*$/m, `date: ${new Date().toISOString().replace(/\.\d{3}Z$/, 'Z')}`),
      );
    }
    const committed = await readFile(file, 'utf8').catch(() => '');
    const undated = (text: string) => text.replace(/^date: .*$/m, 'date: <run>');
    expect(undated(committed), `${file.pathname}: UPDATE_CONFORMANCE_REPORT=1 rewrites it`).toBe(undated(produced));
  });
});
