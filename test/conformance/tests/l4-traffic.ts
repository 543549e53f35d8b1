/**
 * TLSRoute, TCPRoute and UDPRoute tests of gateway-api v1.6.1 conformance/tests (Apache-2.0) that send traffic, to
 * echo-basic's TCP (and TLS) and UDP servers and to coredns (test/conformance/echo.ts), transcribed as data: the
 * status waits as steps, the connections as `client` steps (test/conformance/l4-clients.ts, conformance/utils/tcp and
 * udp); and HTTPRouteDisallowedKind, whose Gateway has only a TLS listener.
 */
import { stringify } from 'yaml';
import { APP_NS as APP, CONTROLLER_NAME, type Harness, WEB_NS as WEB } from '../harness.js';
import { expectEventually, type ExpectedResponse, type Target } from '../http.js';
import {
  dnsExchange,
  expectTcpEventually,
  expectUdpEcho,
  gatewayAddress,
  tcpAddressAvailable,
  tcpEchoSendOnce,
  udpEchoSendOnce,
} from '../l4-clients.js';
import {
  backendOf,
  type ConformanceCase,
  type Cond,
  distributionWithin,
  type NN,
  type RouteKind,
  runSteps,
  type Step,
  type Timeouts,
} from '../steps.js';
import { INFRA } from './httproute-routing.js';

const infra = (name: string): NN => ({ namespace: INFRA, name });
const GROUP = 'gateway.networking.k8s.io';
const ready: Step = { kind: 'namespaceReady', namespace: INFRA };
const accepted = (routeKind: RouteKind, gateway: NN, routes: NN[], listeners?: string[]): Step => ({
  kind: 'accepted',
  routeKind,
  gateway,
  routes,
  ...(listeners ? { listeners } : {}),
});
const routeCondition = (routeKind: RouteKind, route: NN, gateway: NN, condition: Cond): Step => ({
  kind: 'routeCondition',
  routeKind,
  route,
  gateway,
  condition,
});
const ACCEPTED: Cond = { type: 'Accepted', status: 'True', reason: 'Accepted' };
const RESOLVED: Cond = { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs' };
/** TCPRouteMustHaveParents / UDPRouteMustHaveParents: accepted by the Gateway (sectionName not compared) */
const acceptedParent = (routeKind: RouteKind, route: NN, gateway: NN): Step => ({
  kind: 'routeParents',
  routeKind,
  route,
  parents: [
    {
      parentRef: { group: GROUP, kind: 'Gateway', name: gateway.name, namespace: gateway.namespace },
      controllerName: CONTROLLER_NAME,
      conditions: [ACCEPTED],
    },
  ],
  namespaceRequired: false,
});
const client = (what: string, run: (h: Harness, t: Timeouts) => Promise<unknown>): Step => ({
  kind: 'client',
  what,
  run,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** MakeTCPRequestAndExpectEventuallyValidResponse to a listener, plain TCP */
const tcpReaches = (gateway: NN, listener: string | undefined, backend: string, namespace = INFRA): Step =>
  client(`TCP through ${gateway.name}/${listener ?? '(first)'} reaches ${backend}`, async (h, t) => {
    const address = await gatewayAddress(h, gateway, listener, t.statusMs);
    await expectTcpEventually(address, undefined, { backend, namespace }, t);
  });
/** udp.ExpectEchoResponseFromBackend to a listener */
const udpReaches = (gateway: NN, listener: string | undefined, service: string, namespace = INFRA): Step =>
  client(`UDP through ${gateway.name}/${listener ?? '(first)'} reaches Service ${service}`, async (h, t) => {
    const address = await gatewayAddress(h, gateway, listener, t.statusMs);
    await expectUdpEcho(address, t.maxMs, t.delayMs, { service, namespace });
  });

/** a route of the multiple-routes tests, made by the test (MustApplyObjectsWithCleanup) */
const newerRoute = (kind: 'TCPRoute' | 'UDPRoute', name: string, gateway: string, section: string, backend: string) =>
  ({
    apiVersion: `${GROUP}/v1`,
    kind,
    metadata: { name, namespace: INFRA },
    spec: {
      parentRefs: [{ name: gateway, sectionName: section }],
      rules: [{ backendRefs: [{ name: backend, port: kind === 'TCPRoute' ? 3000 : 8080 }] }],
    },
  }) as const;
/** CreationTimestamp has second-level precision: a second's sleep makes the second route strictly newer */
const applyNewer = (route: ReturnType<typeof newerRoute>): Step =>
  client(`${route.kind} ${route.metadata.name} created a second later`, async (h) => {
    await sleep(1_000);
    await h.kubectl.run(['apply', '-f', '-'], stringify(route));
  });
/** GatewayStatusMustHaveListeners for the multiple-routes tests' one listener (`tcp` or `udp`) */
const oneListener = (gateway: string, listener: string, kind: RouteKind, attachedRoutes: number): Step => ({
  kind: 'gatewayListeners',
  gateway: infra(gateway),
  listeners: [{ name: listener, supportedKinds: [{ group: GROUP, kind }], conditions: [ACCEPTED], attachedRoutes }],
});

/** the weighted tests' expectation: shares of connections (datagrams) per Deployment */
const WEIGHTS = (prefix: string) => ({ [`${prefix}-v1`]: 0.7, [`${prefix}-v2`]: 0.3, [`${prefix}-v3`]: 0 });

/** TLS HTTP: MakeTLSRequestAndExpectEventuallyConsistentResponse to the Gateway's first listener, trusting `ca` */
const tlsRequest = async (h: Harness, t: Timeouts, gateway: NN, ca: string, c: ExpectedResponse) => {
  const address = await gatewayAddress(h, gateway, undefined, t.statusMs);
  const target: Target = { address: address.host, listenerPort: 443, port: address.port, scheme: 'https', ca };
  await expectEventually(target, c, t);
};
/** the hostname intersection test's requests: serverName and Host the same name, path `/` */
const tlsCase = (name: string, backend: string): ExpectedResponse => ({
  request: { host: name, path: '/', serverName: name },
  backend,
  namespace: INFRA,
});
/** kubernetes.GetTLSSecret's certificate: the PEM of a Secret's tls.crt */
const secretCertificate = async (h: Harness, name: string): Promise<string> => {
  const secret = (await h.get('v1', 'Secret', INFRA, name)) as { data?: Record<string, string> } | null;
  const pem = Buffer.from(secret?.data?.['tls.crt'] ?? '', 'base64').toString('utf8');
  if (pem === '') throw new Error('missing required server certificate pem for the test');
  return pem;
};
/** one t.Run of tlsroute-hostname-intersection.go: routes accepted and resolved, then its parallel requests */
const intersection = (gateway: string, routes: string[], cases: ExpectedResponse[], rejected: string): Step[] => [
  accepted('TLSRoute', infra(gateway), routes.map(infra)),
  ...routes.map((r) => routeCondition('TLSRoute', infra(r), infra(gateway), RESOLVED)),
  client(
    `TLS through ${gateway}: ${cases.map((c) => c.request.host).join(', ')} reach their backends`,
    async (h, t) => {
      const ca = await secretCertificate(h, 'tls-checks-certificate');
      const verdicts = await Promise.allSettled([
        ...cases.map((c) => tlsRequest(h, t, infra(gateway), ca, c)),
        // MakeTLSConnectionAndExpectEventuallyConnectionRejection, in parallel as Go's subtests run
        runSteps(h, [{ kind: 'tlsRejected', gateway: infra(gateway), serverName: rejected }], t),
      ]);
      const failures = verdicts.flatMap((v, i) =>
        v.status === 'rejected' ? [`#${i} ${(v.reason as Error).message}`] : [],
      );
      if (failures.length > 0) throw new Error(failures.join('\n'));
    },
  ),
];

export const l4TrafficCases = [
  {
    // tcproute-multiple-routes-attachment.go
    name: 'TCPRouteMultipleRoutesAttachment',
    steps: [
      ready,
      accepted('TCPRoute', infra('tcp-multi-route-attach-gateway'), [infra('tcproute-attach-older')], ['tcp']),
      applyNewer(
        newerRoute(
          'TCPRoute',
          'tcproute-attach-newer',
          'tcp-multi-route-attach-gateway',
          'tcp',
          'tcp-attach-backend-2',
        ),
      ),
      routeCondition('TCPRoute', infra('tcproute-attach-older'), infra('tcp-multi-route-attach-gateway'), ACCEPTED),
      routeCondition('TCPRoute', infra('tcproute-attach-newer'), infra('tcp-multi-route-attach-gateway'), ACCEPTED),
      oneListener('tcp-multi-route-attach-gateway', 'tcp', 'TCPRoute', 2),
      tcpReaches(infra('tcp-multi-route-attach-gateway'), 'tcp', 'tcp-attach-backend-1'),
      client('100 connections all reach tcp-attach-backend-1', async (h, t) => {
        const address = await gatewayAddress(h, infra('tcp-multi-route-attach-gateway'), 'tcp', t.statusMs);
        for (let i = 1; i <= 100; i++) {
          const pod = await tcpEchoSendOnce(address, 5_000).catch((error: Error) => {
            throw new Error(`TCP echo request ${i}/100 failed: ${error.message}`);
          });
          if (pod.startsWith('tcp-attach-backend-2-'))
            throw new Error(
              `request ${i}/100 reached newer route backend ${pod}; only the oldest route should be attached`,
            );
          if (!pod.startsWith('tcp-attach-backend-1-'))
            throw new Error(
              `request ${i}/100 reached unexpected backend ${pod}; expected pod from tcp-attach-backend-1-`,
            );
        }
      }),
      {
        kind: 'delete',
        resource: 'tcproutes.gateway.networking.k8s.io',
        namespace: INFRA,
        name: 'tcproute-attach-newer',
      },
    ],
  },
  {
    // tcproute-parentref-attach-all.go
    name: 'TCPRouteParentRefAttachAll',
    steps: [
      ready,
      acceptedParent('TCPRoute', infra('tcp-route-attach-all'), infra('tcp-attach-all-gateway')),
      ...['one', 'two', 'three', 'four'].map((l) =>
        tcpReaches(infra('tcp-attach-all-gateway'), l, 'tcp-echo-attach-all'),
      ),
    ],
  },
  {
    // tcproute-parentref-port-and-section-name.go
    name: 'TCPRouteParentRefPortAndSectionName',
    steps: [
      ready,
      ...(
        [
          ['tcp-route-by-port', 'one', 'tcp-echo-one'],
          ['tcp-route-by-section', 'two', 'tcp-echo-two'],
          ['tcp-route-by-section-and-port', 'three', 'tcp-echo-three'],
        ] as const
      ).flatMap(([route, listener, backend]) => [
        acceptedParent('TCPRoute', infra(route), infra('tcp-multi-listener-gateway')),
        tcpReaches(infra('tcp-multi-listener-gateway'), listener, backend),
      ]),
    ],
  },
  {
    // tcproute-reference-grant.go
    name: 'TCPRouteReferenceGrant',
    steps: [
      ready,
      { kind: 'namespaceReady', namespace: WEB },
      accepted('TCPRoute', infra('tcp-reference-grant-gateway'), [infra('tcp-reference-grant')], ['tcp']),
      tcpReaches(infra('tcp-reference-grant-gateway'), 'tcp', 'tcp-reference-grant-backend', WEB),
      {
        kind: 'delete',
        resource: 'referencegrants.gateway.networking.k8s.io',
        namespace: WEB,
        name: 'tcp-reference-grant',
      },
      routeCondition('TCPRoute', infra('tcp-reference-grant'), infra('tcp-reference-grant-gateway'), {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'RefNotPermitted',
      }),
    ],
  },
  {
    // tcproute-weighted-routing.go
    name: 'TCPRouteWeightedRouting',
    steps: [
      ready,
      accepted('TCPRoute', infra('tcp-weighted-gateway'), [infra('tcp-weighted-route')], ['tcp']),
      client('TCP connections shared 70/30/0 among tcp-backend-v1, -v2, -v3', async (h, t) => {
        const address = await gatewayAddress(h, infra('tcp-weighted-gateway'), 'tcp', t.statusMs);
        await tcpAddressAvailable(address, t.pollMs, t.maxMs);
        await distributionWithin(async () => backendOf(await tcpEchoSendOnce(address, 10_000)), WEIGHTS('tcp-backend'));
      }),
    ],
  },
  {
    // tlsroute-simple-same-namespace.go
    name: 'TLSRouteSimpleSameNamespace',
    steps: [
      ready,
      accepted('TLSRoute', infra('gateway-tlsroute'), [infra('gateway-conformance-infra-test')]),
      client('TLS through gateway-tlsroute reaches tcp-backend, passed through', async (h, t) => {
        const route = (await h.get(`${GROUP}/v1`, 'TLSRoute', INFRA, 'gateway-conformance-infra-test')) as {
          spec?: { hostnames?: string[] };
        } | null;
        const hostnames = route?.spec?.hostnames ?? [];
        if (hostnames.length !== 1)
          throw new Error(`unexpected error in test configuration, found ${hostnames.length} hostnames`);
        const cm = (await h.get('v1', 'ConfigMap', INFRA, 'tls-checks-ca-certificate')) as {
          data?: Record<string, string>;
        } | null;
        const ca = cm?.data?.['ca.crt'];
        if (!ca) throw new Error(`ca.crt not found in configmap: ${INFRA}/tls-checks-ca-certificate`);
        const serverName = hostnames[0]!;
        const address = await gatewayAddress(h, infra('gateway-tlsroute'), undefined, t.statusMs);
        await expectTcpEventually(
          address,
          { serverName, ca },
          { backendIsTls: true, backend: 'tcp-backend', namespace: INFRA, hostname: serverName },
          t,
        );
      }),
    ],
  },
  {
    // tlsroute-hostname-intersection.go
    name: 'TLSRouteHostnameIntersection',
    steps: [
      ready,
      ...intersection(
        'gw-tlsroute-exact-hostname-x-1',
        ['tlsroute-more-specific-wc-hostname-x-1'],
        [tlsCase('abc.example.com', 'tls-backend')],
        'non.matching.com',
      ),
      ...intersection(
        'gw-tlsroute-more-specific-wc-hostname-x-2',
        ['tlsroute-exact-hostname-x-2', 'tlsroute-less-specific-wc-hostname-x-2'],
        [tlsCase('abc.example.com', 'tls-backend'), tlsCase('other.example.com', 'tls-backend-2')],
        'non.matching.com',
      ),
      ...intersection(
        'gw-tlsroute-less-specific-wc-hostname-x-3',
        ['tlsroute-exact-hostname-x-3', 'tlsroute-more-specific-wc-hostname-x-3'],
        [tlsCase('abc.example.com', 'tls-backend'), tlsCase('other.example.com', 'tls-backend-2')],
        'non.matching.com',
      ),
      ...intersection(
        'gw-tlsroute-empty-hostname-x-4',
        ['tlsroute-exact-hostname-x-4', 'tlsroute-less-specific-wc-hostname-x-4'],
        [tlsCase('abc.example.com', 'tls-backend'), tlsCase('other.example.com', 'tls-backend-2')],
        'non.matching.org',
      ),
    ],
  },
  {
    // udproute-simple.go: a DNS query for foo.bar.com. through the Gateway gets coredns's answer
    name: 'UDPRoute',
    steps: [
      accepted('UDPRoute', infra('udp-gateway'), [infra('udp-coredns')]),
      client('a DNS query through udp-gateway is answered', async (h, t) => {
        const address = await gatewayAddress(h, infra('udp-gateway'), undefined, t.statusMs);
        const started = Date.now();
        let last = '';
        while (Date.now() - started < t.maxMs) {
          try {
            return await dnsExchange(address, 'foo.bar.com.', 2_000);
          } catch (error) {
            last = (error as Error).message;
          }
          await sleep(t.delayMs);
        }
        throw new Error(`failed to perform DNS query: ${last}`);
      }),
    ],
  },
  {
    // udproute-multiple-routes-attachment.go
    name: 'UDPRouteMultipleRoutesAttachment',
    steps: [
      ready,
      accepted('UDPRoute', infra('udp-multi-route-attach-gateway'), [infra('udproute-attach-older')], ['udp']),
      applyNewer(
        newerRoute(
          'UDPRoute',
          'udproute-attach-newer',
          'udp-multi-route-attach-gateway',
          'udp',
          'udp-attach-backend-2',
        ),
      ),
      routeCondition('UDPRoute', infra('udproute-attach-older'), infra('udp-multi-route-attach-gateway'), ACCEPTED),
      routeCondition('UDPRoute', infra('udproute-attach-newer'), infra('udp-multi-route-attach-gateway'), ACCEPTED),
      oneListener('udp-multi-route-attach-gateway', 'udp', 'UDPRoute', 2),
      client('rounds of 20 datagrams, all answered by udp-attach-backend-1', async (h, t) => {
        const address = await gatewayAddress(h, infra('udp-multi-route-attach-gateway'), 'udp', t.statusMs);
        const started = Date.now();
        let last = '';
        // a failed probe retries the round; one answer from another backend fails the test
        round: while (Date.now() - started < t.maxMs) {
          for (let i = 1; i <= 20; i++) {
            let pod: string;
            try {
              pod = await udpEchoSendOnce(address, 2_000);
            } catch (error) {
              last = `UDP probe ${i} failed: ${(error as Error).message}`;
              await sleep(t.delayMs);
              continue round;
            }
            if (backendOf(pod) !== 'udp-attach-backend-1')
              throw new Error(
                `UDP traffic reached unexpected backend ${backendOf(pod)} (pod ${pod}); only udp-attach-backend-1 should receive traffic`,
              );
          }
          return;
        }
        throw new Error(`UDP traffic verification failed: ${last}`);
      }),
      {
        kind: 'delete',
        resource: 'udproutes.gateway.networking.k8s.io',
        namespace: INFRA,
        name: 'udproute-attach-newer',
      },
    ],
  },
  {
    // udproute-parentref-attach-all-listeners.go
    name: 'UDPRouteParentRefAttachAllListeners',
    steps: [
      ready,
      acceptedParent('UDPRoute', infra('udp-route-attach-all'), infra('udp-attach-all-listeners-gateway')),
      {
        kind: 'gatewayListeners',
        gateway: infra('udp-attach-all-listeners-gateway'),
        listeners: ['udp-1', 'udp-2', 'udp-3'].map((name) => ({
          name,
          supportedKinds: [{ group: GROUP, kind: 'UDPRoute' }],
          attachedRoutes: 1,
          conditions: [
            { type: 'Accepted', status: 'True' },
            { type: 'ResolvedRefs', status: 'True' },
          ],
        })),
      },
      ...['udp-1', 'udp-2', 'udp-3'].map((l) =>
        udpReaches(infra('udp-attach-all-listeners-gateway'), l, 'udp-echo-attach-all'),
      ),
    ],
  },
  {
    // udproute-parentref-port-and-section-name.go
    name: 'UDPRouteParentRefPortAndSectionName',
    steps: [
      ready,
      ...(
        [
          ['udp-route-by-port', 'by-port', 'udp-echo-by-port'],
          ['udp-route-by-section', 'by-section', 'udp-echo-by-section'],
          ['udp-route-by-section-and-port', 'by-section-and-port', 'udp-echo-by-section-and-port'],
        ] as const
      ).flatMap(([route, listener, backend]) => [
        acceptedParent('UDPRoute', infra(route), infra('udp-multi-listener-gateway')),
        udpReaches(infra('udp-multi-listener-gateway'), listener, backend),
      ]),
    ],
  },
  {
    // udproute-reference-grant.go
    name: 'UDPRouteReferenceGrant',
    steps: [
      ready,
      accepted('UDPRoute', infra('udp-gateway-reference-grant'), [infra('udp-route-reference-grant')]),
      routeCondition('UDPRoute', infra('udp-route-reference-grant'), infra('udp-gateway-reference-grant'), RESOLVED),
      client('a datagram through udp-gateway-reference-grant is answered', async (h, t) => {
        const address = await gatewayAddress(h, infra('udp-gateway-reference-grant'), undefined, t.statusMs);
        await expectUdpEcho(address, t.maxMs, t.delayMs);
      }),
      {
        kind: 'delete',
        resource: 'referencegrants.gateway.networking.k8s.io',
        namespace: APP,
        name: 'udp-reference-grant',
      },
      routeCondition('UDPRoute', infra('udp-route-reference-grant'), infra('udp-gateway-reference-grant'), {
        type: 'ResolvedRefs',
        status: 'False',
        reason: 'RefNotPermitted',
      }),
    ],
  },
  {
    // udproute-weighted-routing.go
    name: 'UDPRouteWeightedRouting',
    steps: [
      ready,
      accepted('UDPRoute', infra('udp-weighted-gateway'), [infra('udp-weighted-route')], ['udp']),
      client('datagrams shared 70/30/0 among udp-backend-v1, -v2, -v3', async (h, t) => {
        const address = await gatewayAddress(h, infra('udp-weighted-gateway'), 'udp', t.statusMs);
        await expectUdpEcho(address, t.maxMs, t.delayMs);
        await distributionWithin(async () => backendOf(await udpEchoSendOnce(address, 2_000)), WEIGHTS('udp-backend'));
      }),
    ],
  },
  {
    // httproute-disallowed-kind.go
    name: 'HTTPRouteDisallowedKind',
    steps: [
      ready,
      routeCondition('HTTPRoute', infra('disallowed-kind'), infra('tlsroutes-only'), RESOLVED),
      routeCondition('HTTPRoute', infra('disallowed-kind'), infra('tlsroutes-only'), {
        type: 'Accepted',
        status: 'False',
        reason: 'NotAllowedByListeners',
      }),
      { kind: 'routeNoAcceptedParents', route: infra('disallowed-kind') },
      { kind: 'gatewayZeroRoutes', gateway: infra('tlsroutes-only') },
    ],
  },
] satisfies ConformanceCase[];
