/**
 * TLSRoute, TCPRoute and UDPRoute in the core and the model: listeners of the stream protocols, who owns a port or an
 * SNI name, status as the spec says, hostile values refused, and what the stream block gets (rendered with the real
 * template). The traffic itself: test/controller/gateway-l4.test.ts (a real nginx).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { buildGatewayRoutes, type GatewayInput } from '../../src/model/gateway/index.js';
import { checkGatewayHostname, checkHost } from '../../src/model/validate.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import {
  GATEWAY_OPTIONS,
  gateway,
  gatewayClass,
  grant,
  input,
  listener,
  route,
  tlsSecret as fixtureTlsSecret,
} from './fixtures.js';

const GROUP = 'gateway.networking.k8s.io';
type Obj = Record<string, unknown>;

const l4Route = (kind: string, name: string, spec: Obj, extra: { namespace?: string; created?: string } = {}): Obj => ({
  ...route(name, {
    ...(extra.namespace ? { namespace: extra.namespace } : {}),
    ...(extra.created ? { created: extra.created } : {}),
  }),
  kind,
  spec: {
    parentRefs: [{ name: 'gw', namespace: 'default' }],
    rules: [{ backendRefs: [{ name: 'echo', port: 7000 }] }],
    ...spec,
  },
});
const echoService = (protocol = 'TCP', name = 'echo', port = 7000, namespace = 'default'): Obj => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { ports: [{ port, protocol }] },
});
const tls = (name: string, extra: Obj = {}) =>
  listener(name, { port: 443, protocol: 'TLS', tls: { mode: 'Passthrough' }, ...extra });

const listenerConditions = (i: GatewayInput, name: string, gw = 'gw') =>
  buildGatewayRoutes(i)
    .status.gateways.find((g) => g.name === gw)
    ?.listeners.find((l) => l.name === name)
    ?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);
const parentConditions = (
  statuses:
    | readonly {
        name: string;
        parents: readonly { conditions: readonly { type: string; status: string; reason: string }[] }[];
      }[]
    | undefined,
  name: string,
) => statuses?.find((r) => r.name === name)?.parents[0]?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);

describe('stream listeners', () => {
  it('TLS Passthrough and Terminate, TCP and UDP are accepted with one route kind each; another mode is refused', () => {
    const i = input({
      gateways: [
        gateway([
          listener('tcp', { port: 9000, protocol: 'TCP' }),
          listener('udp', { port: 9000, protocol: 'UDP' }),
          listener('tls', { port: 8443, protocol: 'TLS', tls: { mode: 'Passthrough' } }),
          listener('term', {
            port: 8444,
            protocol: 'TLS',
            tls: { mode: 'Terminate', certificateRefs: [{ name: 'x' }] },
          }),
          listener('nocert', { port: 8445, protocol: 'TLS', tls: { mode: 'Terminate' } }),
          listener('odd', { port: 8446, protocol: 'TLS', tls: { mode: 'Reencrypt' } }),
        ]),
      ],
      services: [echoService()],
      secrets: [fixtureTlsSecret('x')],
    });
    const gw = buildGatewayRoutes(i).status.gateways[0];
    expect(gw?.listeners.map((l) => [l.name, l.supportedKinds.map((k) => k.kind)])).toEqual([
      ['tcp', ['TCPRoute']],
      ['udp', ['UDPRoute']],
      ['tls', ['TLSRoute']],
      ['term', ['TLSRoute']],
      ['nocert', ['TLSRoute']],
      // a mode we do not know is refused, so it supports no kind
      ['odd', []],
    ]);
    // TCP and UDP on one port number are two sockets
    expect(listenerConditions(i, 'udp')).toContain('Conflicted=False/NoConflicts');
    expect(listenerConditions(i, 'term')).toContain('Programmed=True/Programmed');
    // Terminate needs its certificate, as HTTPS does
    expect(listenerConditions(i, 'nocert')).toEqual(
      expect.arrayContaining(['ResolvedRefs=False/InvalidCertificateRef', 'Programmed=False/Invalid']),
    );
    expect(listenerConditions(i, 'odd')).toContain('Accepted=False/UnsupportedValue');
    expect(listenerConditions(i, 'tls')).toContain('Programmed=True/Programmed');
  });

  it('a Terminate listener’s Secret in another namespace needs a ReferenceGrant, as an HTTPS listener’s does', () => {
    const term = listener('term', {
      port: 8443,
      protocol: 'TLS',
      tls: { mode: 'Terminate', certificateRefs: [{ name: 'cert', namespace: 'other' }] },
    });
    const without = input({ gateways: [gateway([term])], secrets: [fixtureTlsSecret('cert', 'other')] });
    expect(listenerConditions(without, 'term')).toEqual(
      expect.arrayContaining(['ResolvedRefs=False/RefNotPermitted', 'Programmed=False/Invalid']),
    );
    const granted = {
      ...without,
      referenceGrants: [
        grant('other', [{ group: GROUP, kind: 'Gateway', namespace: 'default' }], [{ group: '', kind: 'Secret' }]),
      ],
    };
    expect(listenerConditions(granted as GatewayInput, 'term')).toEqual(
      expect.arrayContaining(['ResolvedRefs=True/ResolvedRefs', 'Programmed=True/Programmed']),
    );
  });

  it('allowedRoutes kinds another protocol serves: InvalidRouteKinds, the protocol kind kept', () => {
    const i = input({
      gateways: [gateway([tls('tls', { allowedRoutes: { kinds: [{ kind: 'TCPRoute' }, { kind: 'TLSRoute' }] } })])],
    });
    expect(
      buildGatewayRoutes({ ...i, ports: { http: 80, https: 443, sharedHttps: true } }).status.gateways[0]?.listeners[0]
        ?.supportedKinds,
    ).toEqual([{ group: GROUP, kind: 'TLSRoute' }]);
    expect(listenerConditions(i, 'tls')).toContain('ResolvedRefs=False/InvalidRouteKinds');
  });

  it('TLS on the https port: beside HTTPS only under ssl-passthrough, or alone on a Gateway address of its own', () => {
    const listeners = [
      listener('https', { port: 443, protocol: 'HTTPS', hostname: 'web.test', tls: { certificateRefs: [] } }),
      tls('tls', { hostname: 'pass.test' }),
    ];
    const i = input({ gateways: [gateway(listeners)] });
    // nginx's https port is the http module's
    expect(listenerConditions(i, 'tls')).toContain('Conflicted=True/ProtocolConflict');
    expect(listenerConditions({ ...i, ports: { http: 80, https: 443, sharedHttps: true } }, 'tls')).toContain(
      'Conflicted=False/NoConflicts',
    );
    // on a Gateway's own address, while the Ingress servers listen on one address: alone, not beside HTTPS
    const own = { ports: { http: 80, https: 443, sharedHttps: false, ownAddressFree: true }, addresses: ['10.0.0.9'] };
    expect(listenerConditions({ ...input({ gateways: [gateway([tls('tls')])] }), ...own }, 'tls')).toContain(
      'Programmed=True/Programmed',
    );
    expect(listenerConditions({ ...i, ...own }, 'tls')).toContain('Conflicted=True/ProtocolConflict');
  });

  it('a port of the TCP or UDP services ConfigMap is nginx’s: a listener there is ProtocolConflict', () => {
    const i = {
      ...input({
        gateways: [
          gateway([listener('tcp', { port: 9000, protocol: 'TCP' }), listener('udp', { port: 9001, protocol: 'UDP' })]),
        ],
      }),
      streamPorts: { tcp: [9000], udp: [] },
    };
    expect(listenerConditions(i, 'tcp')).toContain('Conflicted=True/ProtocolConflict');
    expect(listenerConditions(i, 'udp')).toContain('Programmed=True/Programmed');
  });

  it('two TCP listeners on one port, in two Gateways: the older keeps it', () => {
    const tcp = [listener('tcp', { port: 9000, protocol: 'TCP' })];
    const older = {
      ...gateway(tcp, 'a'),
      metadata: { name: 'a', namespace: 'default', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' },
    };
    const newer = {
      ...gateway(tcp, 'b'),
      metadata: { name: 'b', namespace: 'default', generation: 1, creationTimestamp: '2026-01-02T00:00:00Z' },
    };
    const i = input({ gateways: [newer, older] });
    expect(listenerConditions(i, 'tcp', 'a')).toContain('Programmed=True/Programmed');
    expect(listenerConditions(i, 'tcp', 'b')).toContain('Conflicted=True/HostnameConflict');
  });
});

describe('stream routes', () => {
  const gw = gateway([
    listener('tcp', { port: 9000, protocol: 'TCP' }),
    listener('udp', { port: 9001, protocol: 'UDP' }),
    listener('tls', { port: 8443, protocol: 'TLS', hostname: '*.example.com', tls: { mode: 'Passthrough' } }),
  ]);
  const services = [
    echoService(),
    echoService('UDP', 'dns', 53),
    echoService('TCP', 'tls-a', 443),
    echoService('TCP', 'tls-b', 443),
  ];

  it('two TCPRoutes on one listener: both Accepted, both counted, the older served', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [gw],
        services,
        tcpRoutes: [
          l4Route(
            'TCPRoute',
            'newer',
            { parentRefs: [{ name: 'gw', sectionName: 'tcp' }] },
            { created: '2026-01-02T00:00:00Z' },
          ),
          l4Route('TCPRoute', 'older', { parentRefs: [{ name: 'gw', sectionName: 'tcp' }] }),
        ],
      }),
    );
    expect(parentConditions(result.status.tcpRoutes, 'newer')).toEqual([
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
    ]);
    expect(result.status.gateways[0]?.listeners.find((l) => l.name === 'tcp')?.attachedRoutes).toBe(2);
    expect(result.streams?.find((s) => s.listener === 'tcp')?.routes.map((r) => r.route.name)).toEqual(['older']);
  });

  it('TLSRoute hostnames intersect the listener’s; a route with none in common is NoMatchingListenerHostname', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [gw],
        services,
        tlsRoutes: [
          l4Route('TLSRoute', 'a', {
            hostnames: ['a.example.com', 'a.other.org'],
            rules: [{ backendRefs: [{ name: 'tls-a', port: 443 }] }],
          }),
          l4Route('TLSRoute', 'b', {
            hostnames: ['*.example.com'],
            rules: [{ backendRefs: [{ name: 'tls-b', port: 443 }] }],
          }),
          l4Route('TLSRoute', 'off', { hostnames: ['x.other.org'] }),
        ],
      }),
    );
    expect(
      result.streams?.find((s) => s.listener === 'tls')?.routes.map((r) => `${r.hostname} ${r.route.name}`),
    ).toEqual(['a.example.com a', '*.example.com b']);
    expect(parentConditions(result.status.tlsRoutes, 'off')).toContain('Accepted=False/NoMatchingListenerHostname');
  });

  it('a wildcard before one label (`*.com`) is a hostname, of a listener and of a route', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [
          gateway([listener('tls', { port: 8443, protocol: 'TLS', hostname: '*.com', tls: { mode: 'Passthrough' } })]),
        ],
        services,
        tlsRoutes: [
          l4Route('TLSRoute', 'exact', {
            hostnames: ['abc.example.com'],
            rules: [{ backendRefs: [{ name: 'tls-a', port: 443 }] }],
          }),
          l4Route('TLSRoute', 'wide', {
            hostnames: ['*.example.com'],
            rules: [{ backendRefs: [{ name: 'tls-b', port: 443 }] }],
          }),
          l4Route('TLSRoute', 'widest', { hostnames: ['*.org'] }),
        ],
      }),
    );
    expect(result.status.gateways[0]?.listeners[0]?.conditions.map((c) => `${c.type}=${c.status}`)).toContain(
      'Accepted=True',
    );
    expect(
      result.streams?.find((s) => s.listener === 'tls')?.routes.map((r) => `${r.hostname} ${r.route.name}`),
    ).toEqual(['abc.example.com exact', '*.example.com wide']);
    expect(parentConditions(result.status.tlsRoutes, 'widest')).toContain('Accepted=False/NoMatchingListenerHostname');
  });

  it('a UDPRoute needs a UDP Service port, a TCPRoute a TCP one (BackendNotFound), and a kind its listener serves', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [gw],
        services,
        udpRoutes: [l4Route('UDPRoute', 'u', { parentRefs: [{ name: 'gw', sectionName: 'udp' }] })],
        tcpRoutes: [l4Route('TCPRoute', 't', { parentRefs: [{ name: 'gw', sectionName: 'udp' }] })],
      }),
    );
    expect(parentConditions(result.status.udpRoutes, 'u')).toEqual([
      'Accepted=True/Accepted',
      'ResolvedRefs=False/BackendNotFound',
    ]);
    expect(parentConditions(result.status.tcpRoutes, 't')).toContain('Accepted=False/NotAllowedByListeners');
  });

  it('a backend in another namespace needs a ReferenceGrant naming the route kind', () => {
    const cross = (grants: Obj[]) =>
      parentConditions(
        buildGatewayRoutes(
          input({
            gateways: [
              gateway([
                listener('tcp', { port: 9000, protocol: 'TCP', allowedRoutes: { namespaces: { from: 'All' } } }),
              ]),
            ],
            services,
            referenceGrants: grants,
            tcpRoutes: [
              l4Route(
                'TCPRoute',
                't',
                { rules: [{ backendRefs: [{ name: 'echo', namespace: 'default', port: 7000 }] }] },
                { namespace: 'other' },
              ),
            ],
          }),
        ).status.tcpRoutes,
        't',
      );
    expect(cross([])).toContain('ResolvedRefs=False/RefNotPermitted');
    const to = [{ group: '', kind: 'Service' }];
    expect(cross([grant('default', [{ group: GROUP, kind: 'HTTPRoute', namespace: 'other' }], to)])).toContain(
      'ResolvedRefs=False/RefNotPermitted',
    );
    expect(cross([grant('default', [{ group: GROUP, kind: 'TCPRoute', namespace: 'other' }], to)])).toContain(
      'ResolvedRefs=True/ResolvedRefs',
    );
  });

  it('hostile values are refused, naming the field: UnsupportedValue', () => {
    const result = buildGatewayRoutes(
      input({
        gateways: [gw],
        services,
        tlsRoutes: [l4Route('TLSRoute', 'bad', { hostnames: ['a.example.com;\n ssl_preread off'] })],
        tcpRoutes: [
          l4Route('TCPRoute', 'named', { hostnames: ['a.example.com'] }),
          l4Route('TCPRoute', 'two', { rules: [{ backendRefs: [] }, { backendRefs: [] }] }),
        ],
      }),
    );
    expect(result.problems.map((p) => `${p.kind} ${p.name} ${p.field}`)).toEqual(
      expect.arrayContaining([
        'TLSRoute bad spec.hostnames[0]',
        'TCPRoute named spec.hostnames',
        'TCPRoute two spec.rules',
      ]),
    );
    for (const name of ['named', 'two'])
      expect(parentConditions(result.status.tcpRoutes, name)).toContain('Accepted=False/UnsupportedValue');
    expect(result.streams?.flatMap((s) => s.routes.map((r) => r.route.name))).toEqual([]);
  });

  it('never throws on arbitrary objects, and what it serves passed the validators', () => {
    const anyValue = fc.anything({ maxDepth: 3 });
    const arbRoute = fc.record({
      hostnames: fc.oneof(fc.array(fc.oneof(fc.string(), fc.constantFrom('a.example.com', '*.example.com'))), anyValue),
      rules: fc.oneof(
        fc.array(
          fc.record({
            backendRefs: fc.oneof(
              fc.array(fc.record({ name: fc.string(), port: anyValue, weight: anyValue })),
              anyValue,
            ),
          }),
        ),
        anyValue,
      ),
    });
    const kinds = fc.constantFrom('TLSRoute', 'TCPRoute', 'UDPRoute');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(kinds, arbRoute), { maxLength: 4 }),
        fc.oneof(fc.string(), anyValue),
        (routes, mode) => {
          const gws = [gateway([...((gw.spec as Obj).listeners as Obj[]), tls('odd', { port: 8445, tls: { mode } })])];
          const of = (kind: string) =>
            routes.flatMap(([k, r], i) =>
              k === kind ? [{ ...l4Route(kind, `r${i}`, {}), spec: { parentRefs: [{ name: 'gw' }], ...r } }] : [],
            );
          const result = buildGatewayRoutes(
            input({
              gateways: gws,
              services,
              tlsRoutes: of('TLSRoute'),
              tcpRoutes: of('TCPRoute'),
              udpRoutes: of('UDPRoute'),
            }),
          );
          for (const served of result.streams ?? [])
            for (const r of served.routes) {
              if (r.hostname !== null) expect(checkGatewayHostname(r.hostname).ok).toBe(true);
              for (const b of r.backends) if (b.kind === 'service') expect(checkHost(b.name).ok).toBe(true);
            }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('the stream block', () => {
  it('weighted backends split connections; an unresolved share and an unknown SNI name are closed', async () => {
    const objects = [
      ...serviceWithEndpoints('web', [{ ip: '10.0.0.1', port: 8080 }]),
      echoService(),
      echoService('TCP', 'echo2'),
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'echo-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'echo' } },
        addressType: 'IPv4',
        ports: [{ port: 7000, protocol: 'TCP' }],
        endpoints: [{ addresses: ['10.0.0.2'], conditions: { ready: true } }],
      },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'echo2-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'echo2' } },
        addressType: 'IPv4',
        ports: [{ port: 7000, protocol: 'TCP' }],
        endpoints: [{ addresses: ['10.0.0.3'], conditions: { ready: true } }],
      },
      gatewayClass(),
      gateway([
        listener('tcp', { port: 9000, protocol: 'TCP' }),
        listener('tls', { port: 8443, protocol: 'TLS', tls: { mode: 'Passthrough' } }),
      ]),
      l4Route('TCPRoute', 'w', {
        rules: [
          {
            backendRefs: [
              { name: 'echo', port: 7000, weight: 70 },
              { name: 'echo2', port: 7000, weight: 20 },
              { name: 'missing', port: 7000, weight: 10 },
            ],
          },
        ],
      }),
      l4Route('TLSRoute', 's', { hostnames: ['*.example.com'] }),
    ];
    const result = buildModel(snapshotOf(objects), GATEWAY_OPTIONS);
    const text = render(result.model, await loadTemplate());
    const stream = text.slice(text.indexOf('stream {'));
    expect(stream).toContain(
      'split_clients "$remote_addr$remote_port$msec" $ia_gw_split_0 {\n        70.00% "tcp_default_echo_7000";\n        20.00% "tcp_default_echo2_7000";\n        * "ia_gw_closed";',
    );
    expect(stream).toMatch(/listen "9000";\n[^}]*proxy_pass "\$ia_gw_split_0";/);
    expect(stream).toContain('"~*^.+\\\\.example\\\\.com$" "tcp_default_echo_7000";\n        default ia_gw_closed;');
    expect(stream).toContain('server 127.0.0.1:1 down;');
    expect(result.problems.map((p) => `${p.kind} ${p.name} ${p.field}`)).toContain(
      'TCPRoute w spec.rules[0].backendRefs[2]',
    );
  });
});

describe('TLS Terminate in the stream block', () => {
  it('a Terminate name goes to an internal ssl socket with its certificate, beside a Passthrough name on one port', async () => {
    const slice = (name: string, ip: string, port: number) => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-1`, namespace: 'default', labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ port, protocol: 'TCP' }],
      endpoints: [{ addresses: [ip], conditions: { ready: true } }],
    });
    const objects = [
      echoService('TCP', 'plain', 3000),
      echoService('TCP', 'secure', 8443),
      slice('plain', '10.0.0.2', 3000),
      slice('secure', '10.0.0.3', 8443),
      fixtureTlsSecret('term-cert'),
      gatewayClass(),
      gateway([
        listener('term', {
          port: 8883,
          protocol: 'TLS',
          hostname: 'tls.example.com',
          tls: { mode: 'Terminate', certificateRefs: [{ name: 'term-cert' }] },
        }),
        listener('pass', { port: 8883, protocol: 'TLS', hostname: 'abc.example.com', tls: { mode: 'Passthrough' } }),
      ]),
      l4Route('TLSRoute', 't', {
        hostnames: ['tls.example.com'],
        rules: [{ backendRefs: [{ name: 'plain', port: 3000 }] }],
      }),
      l4Route('TLSRoute', 'p', {
        hostnames: ['abc.example.com'],
        rules: [{ backendRefs: [{ name: 'secure', port: 8443 }] }],
      }),
    ];
    const result = buildModel(snapshotOf(objects), GATEWAY_OPTIONS);
    expect(result.problems).toEqual([]);
    const terminations = result.model.stream?.gateway?.terminations ?? [];
    expect(terminations).toHaveLength(1);
    const [term] = terminations;
    // the certificate is one of the files the controller writes (0600) before nginx.conf names it
    expect(result.model.certificates.map((c) => c.file)).toContain(term!.certificateFile);
    expect(term!.socket).toMatch(/^\/var\/lib\/ingress-actors\/tls_[0-9a-f]{16}\.sock$/);
    const text = render(result.model, await loadTemplate());
    const stream = text.slice(text.indexOf('stream {'));
    expect(stream).toContain(
      `"abc.example.com" "tcp_default_secure_8443";\n        "tls.example.com" "${term!.upstream}";\n        default ia_gw_closed;`,
    );
    expect(stream).toContain(
      `upstream "${term!.upstream}" {\n        server "unix:${term!.socket}";\n    }\n    server {\n` +
        `        listen "unix:${term!.socket}" ssl;\n        ssl_certificate "${term!.certificateFile}";\n` +
        `        ssl_certificate_key "${term!.certificateFile}";\n        ssl_protocols TLSv1.2 TLSv1.3;\n` +
        '        proxy_timeout 600s;\n        proxy_pass "tcp_default_plain_3000";\n    }',
    );
    // the same build again names the same socket (nginx keeps it over a reload)
    const again = buildModel(snapshotOf(objects), GATEWAY_OPTIONS).model.stream?.gateway?.terminations;
    expect(again).toEqual(terminations);
  });

  it('a certificate an HTTPS server pushes stays a file while a Terminate listener names it too', () => {
    const shared = { certificateRefs: [{ name: 'shared' }] };
    const objects = [
      echoService('TCP', 'plain', 3000),
      ...serviceWithEndpoints('web', [{ ip: '10.0.0.1', port: 8080 }]),
      fixtureTlsSecret('shared'),
      gatewayClass(),
      gateway([
        listener('https', { port: 443, protocol: 'HTTPS', hostname: 'web.example.com', tls: shared }),
        listener('term', {
          port: 8883,
          protocol: 'TLS',
          hostname: 'tls.example.com',
          tls: { mode: 'Terminate', ...shared },
        }),
      ]),
      route('web', { parentRefs: [{ name: 'gw', sectionName: 'https' }] }),
      l4Route('TLSRoute', 't', {
        hostnames: ['tls.example.com'],
        rules: [{ backendRefs: [{ name: 'plain', port: 3000 }] }],
      }),
    ];
    const built = buildModel(snapshotOf(objects), GATEWAY_OPTIONS).model;
    const file = built.stream?.gateway?.terminations?.[0]?.certificateFile;
    expect(file).toBeDefined();
    const { model, tables } = new DynamicSplit().split(built);
    // the HTTPS server's name is served from the pushed table, and the stream block's file is still written
    expect(tables.certificates.certificates.some((c) => c.servers.length > 0)).toBe(true);
    expect(model.certificates.map((c) => c.file)).toContain(file);
  });

  it('hostile route hostnames never reach the Terminate servers: what they hold passed the validators', async () => {
    const template = await loadTemplate();
    let keys = 0;
    let wildcards = 0;
    const hostnames = fc.array(
      fc.oneof(fc.string(), fc.constantFrom('tls.example.com', '*.example.com', 'a"b;c', 'x\n}', '$host')),
      { maxLength: 4 },
    );
    fc.assert(
      fc.property(hostnames, (names) => {
        const objects = [
          echoService('TCP', 'plain', 3000),
          fixtureTlsSecret('term-cert'),
          gatewayClass(),
          gateway([
            listener('term', {
              port: 8883,
              protocol: 'TLS',
              tls: { mode: 'Terminate', certificateRefs: [{ name: 'term-cert' }] },
            }),
          ]),
          l4Route('TLSRoute', 't', { hostnames: names, rules: [{ backendRefs: [{ name: 'plain', port: 3000 }] }] }),
        ];
        const { model } = buildModel(snapshotOf(objects), GATEWAY_OPTIONS);
        for (const t of model.stream?.gateway?.terminations ?? []) {
          expect(t.upstream).toMatch(/^ia_gw_tls_[0-9a-f]{16}$/);
          expect(t.socket).toMatch(/^\/var\/lib\/ingress-actors\/tls_[0-9a-f]{16}\.sock$/);
          expect(t.certificateFile).toMatch(/^certificates\/[A-Za-z0-9._-]+$/);
          const host = t.comment.split(' ').at(-1)!;
          expect(host === '*' || checkHost(host.replace(/^\*\./, 'x.')).ok).toBe(true);
        }
        // the SNI map's keys: checked hostnames, or the wildcard's regex made from one
        const text = render(model, template);
        const map = /map \$ssl_preread_server_name \$ia_gw_sni_0 \{\n([^}]*)\}/.exec(text)?.[1] ?? '';
        for (const line of map.split('\n').filter((l) => l.trim().startsWith('"'))) {
          const key = /^\s*"((?:[^"\\]|\\.)*)" /.exec(line)?.[1] ?? '';
          const exact = key.startsWith('~') ? null : key;
          keys++;
          if (exact === null) wildcards++;
          if (exact !== null) expect(checkHost(exact).ok, key).toBe(true);
          else expect(key).toMatch(/^~\*\^\.\+(\\\\\.[a-z0-9-]+)+\$$/);
        }
      }),
      // a run with a wildcard among valid names, always: random runs hold one only now and then (a hostname fast-check
      // makes up is seldom valid, and one invalid name leaves the route out), so the count below was luck before
      { numRuns: 100, examples: [[['*.example.com', 'tls.example.com']]] },
    );
    // the check saw map keys, wildcards among them
    expect(wildcards).toBeGreaterThan(0);
    expect(keys).toBeGreaterThan(wildcards);
  });

  it('a Terminate listener whose certificate went bad closes its names, with a Problem', () => {
    const objects = [
      echoService('TCP', 'plain', 3000),
      { ...fixtureTlsSecret('bad', 'default', { crt: 'not a certificate', key: 'nor a key' }) },
      gatewayClass(),
      gateway([
        listener('term', {
          port: 8883,
          protocol: 'TLS',
          tls: { mode: 'Terminate', certificateRefs: [{ name: 'bad' }] },
        }),
      ]),
      l4Route('TLSRoute', 't', {
        hostnames: ['tls.example.com'],
        rules: [{ backendRefs: [{ name: 'plain', port: 3000 }] }],
      }),
    ];
    const result = buildModel(snapshotOf(objects), GATEWAY_OPTIONS);
    // judged in the core: the listener is not programmed, so nothing of it reaches the stream block
    expect(result.model.stream?.gateway?.terminations ?? []).toEqual([]);
    expect(result.problems.map((p) => `${p.kind} ${p.field}`)).toContain(
      'Gateway spec.listeners[0].tls.certificateRefs',
    );
  });
});
