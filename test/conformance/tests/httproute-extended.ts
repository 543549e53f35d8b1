/**
 * Extended-feature HTTPRoute tests of gateway-api v1.6.1 conformance/tests (Apache-2.0), transcribed as data
 * (httproute-query-param-matching.go, -method-matching.go, -response-header-modifier.go, -rewrite-path.go,
 * -rewrite-host.go, -redirect-path.go, -redirect-port.go, -redirect-scheme.go, -timeout-request.go,
 * -timeout-backend-request.go, -request-mirror.go,
 * -request-multiple-mirrors.go).
 */
import type { ExpectedResponse } from '../http.js';
import type { ConformanceCase } from '../steps.js';
import { INFRA, routed, SAME_NS, status, to, V1, V2, V3 } from './httproute-routing.js';

const infra = (name: string) => ({ namespace: INFRA, name });
const method = (
  m: string,
  path: string,
  backend: string | number,
  headers?: Record<string, string>,
): ExpectedResponse =>
  typeof backend === 'number'
    ? { request: { method: m, path, ...(headers ? { headers } : {}) }, response: { statusCode: backend } }
    : { request: { method: m, path, ...(headers ? { headers } : {}) }, backend, namespace: INFRA };
/** the case answers from V1 with the response headers `headers` (and without `absent`) */
const responseHeaders = (
  path: string,
  backendSets: Record<string, string>,
  headers: Record<string, string> | undefined,
  absent?: string[],
): ExpectedResponse => ({
  request: { path },
  backendSetResponseHeaders: backendSets,
  response: { ...(headers ? { headers } : {}), ...(absent ? { absentHeaders: absent } : {}) },
  backend: V1,
  namespace: INFRA,
});

/** rewritten: the backend V1/V2 sees `seen` (path, host, headers) for the request `sent` */
const rewritten = (
  sent: { path: string; host?: string; headers?: Record<string, string> },
  seen: { path: string; host?: string; headers?: Record<string, string>; absentHeaders?: string[] },
  backend = V1,
): ExpectedResponse => ({ request: sent, expectedRequest: seen, backend, namespace: INFRA });
const modifiedHeaders = {
  'X-Header-Add': 'header-val-1',
  'X-Header-Add-Append': 'append-val-1,header-val-2',
  'X-Header-Set': 'set-overwrites-values',
};
/** redirect: the request to `path` is answered `code` with a Location like `to` */
const redirect = (
  path: string,
  code: number,
  to: { scheme?: string; host?: string; port?: string; path?: string },
): ExpectedResponse => ({
  request: { path, unfollowRedirect: true },
  response: { statusCode: code },
  redirectRequest: to,
  namespace: INFRA,
});

export const extendedCases: ConformanceCase[] = [
  routed(
    'HTTPRouteRequestMultipleMirrors',
    SAME_NS,
    [infra('request-multiple-mirrors')],
    [
      {
        request: { path: '/multi-mirror' },
        expectedRequest: { path: '/multi-mirror' },
        backend: V1,
        mirroredTo: [
          { name: V2, namespace: INFRA },
          { name: V3, namespace: INFRA },
        ],
        namespace: INFRA,
      },
      {
        request: {
          path: '/multi-mirror-and-modify-request-headers',
          headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
        },
        expectedRequest: {
          path: '/multi-mirror-and-modify-request-headers',
          headers: {
            'X-Header-Add': 'header-val-1',
            'X-Header-Add-Append': 'append-val-1,header-val-2',
            'X-Header-Set': 'set-overwrites-values',
          },
          absentHeaders: ['X-Header-Remove'],
        },
        backend: V1,
        mirroredTo: [
          { name: V2, namespace: INFRA },
          { name: V3, namespace: INFRA },
        ],
        namespace: INFRA,
      },
    ],
  ),
  routed(
    'HTTPRouteRequestMirror',
    SAME_NS,
    [infra('request-mirror')],
    [
      {
        request: { path: '/mirror' },
        expectedRequest: { path: '/mirror' },
        backend: V1,
        mirroredTo: [{ name: V2, namespace: INFRA }],
        namespace: INFRA,
      },
      {
        request: {
          path: '/mirror-and-modify-headers',
          headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
        },
        expectedRequest: {
          path: '/mirror-and-modify-headers',
          headers: {
            'X-Header-Add': 'header-val-1',
            'X-Header-Add-Append': 'append-val-1,header-val-2',
            'X-Header-Set': 'set-overwrites-values',
          },
          absentHeaders: ['X-Header-Remove'],
        },
        backend: V1,
        mirroredTo: [{ name: V2, namespace: INFRA }],
        namespace: INFRA,
      },
    ],
  ),
  ...(
    [
      ['HTTPRouteTimeoutRequest', 'request-timeout', 'request-timeout'],
      ['HTTPRouteTimeoutBackendRequest', 'backend-request-timeout', 'backend-timeout'],
    ] as const
  ).map(([name, route, path]) =>
    routed(
      name,
      SAME_NS,
      [infra(route)],
      [
        { request: { path: `/${path}` }, response: { statusCode: 200 }, namespace: INFRA },
        { request: { path: `/${path}?delay=1s` }, response: { statusCode: 504 }, namespace: INFRA },
        { request: { path: `/disable-${path}?delay=1s` }, response: { statusCode: 200 }, namespace: INFRA },
      ],
    ),
  ),
  routed(
    'HTTPRouteRewritePath',
    SAME_NS,
    [infra('rewrite-path')],
    [
      rewritten({ path: '/prefix/one/two' }, { path: '/one/two' }),
      rewritten({ path: '/strip-prefix/three' }, { path: '/three' }),
      rewritten({ path: '/strip-prefix' }, { path: '/' }),
      rewritten({ path: '/full/one/two' }, { path: '/one' }),
      rewritten(
        {
          path: '/full/rewrite-path-and-modify-headers/test',
          headers: {
            'X-Header-Remove': 'remove-val',
            'X-Header-Add-Append': 'append-val-1',
            'X-Header-Set': 'set-val',
          },
        },
        { path: '/test', headers: modifiedHeaders, absentHeaders: ['X-Header-Remove'] },
      ),
      rewritten(
        {
          path: '/prefix/rewrite-path-and-modify-headers/one',
          headers: {
            'X-Header-Remove': 'remove-val',
            'X-Header-Add-Append': 'append-val-1',
            'X-Header-Set': 'set-val',
          },
        },
        { path: '/prefix/one', headers: modifiedHeaders, absentHeaders: ['X-Header-Remove'] },
      ),
    ],
  ),
  routed(
    'HTTPRouteRewriteHost',
    SAME_NS,
    [infra('rewrite-host')],
    [
      rewritten({ path: '/one', host: 'rewrite.example' }, { path: '/one', host: 'one.example.org' }),
      rewritten({ path: '/two', host: 'rewrite.example' }, { path: '/two', host: 'example.org' }, V2),
      rewritten(
        {
          path: '/rewrite-host-and-modify-headers',
          host: 'rewrite.example',
          headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1' },
        },
        {
          path: '/rewrite-host-and-modify-headers',
          host: 'test.example.org',
          headers: modifiedHeaders,
          absentHeaders: ['X-Header-Remove'],
        },
        V2,
      ),
    ],
  ),
  routed(
    'HTTPRouteRedirectPath',
    SAME_NS,
    [infra('redirect-path')],
    [
      redirect('/original-prefix/lemon', 302, { path: '/replacement-prefix/lemon' }),
      redirect('/full/path/original', 302, { path: '/full-path-replacement' }),
      redirect('/path-and-host', 302, { host: 'example.org', path: '/replacement-prefix' }),
      redirect('/path-and-status', 301, { path: '/replacement-prefix' }),
      redirect('/full-path-and-host', 302, { host: 'example.org', path: '/replacement-full' }),
      redirect('/full-path-and-status', 301, { path: '/replacement-full' }),
    ],
  ),
  // httproute-303-redirect.go, -307-, -308- (provisional): the status code as given, the path kept; 303 answers a POST
  routed(
    'HTTPRoute303Redirect',
    SAME_NS,
    [infra('303-redirect')],
    [
      {
        request: { path: '/see-other', method: 'POST', unfollowRedirect: true },
        response: { statusCode: 303 },
        redirectRequest: { path: '/see-other' },
        namespace: INFRA,
      },
    ],
  ),
  routed(
    'HTTPRoute307Redirect',
    SAME_NS,
    [infra('307-redirect')],
    [redirect('/temporary', 307, { path: '/temporary' })],
  ),
  routed(
    'HTTPRoute308Redirect',
    SAME_NS,
    [infra('308-redirect')],
    [redirect('/permanent', 308, { path: '/permanent' })],
  ),
  routed(
    'HTTPRouteRedirectPort',
    SAME_NS,
    [infra('redirect-port')],
    [
      redirect('/port', 302, { port: '8083' }),
      redirect('/port-and-host', 302, { host: 'example.org', port: '8083' }),
      redirect('/port-and-status', 301, { port: '8083' }),
      redirect('/port-and-host-and-status', 302, { port: '8083', host: 'example.org' }),
    ],
  ),
  routed(
    'HTTPRouteRedirectScheme',
    SAME_NS,
    [infra('redirect-scheme')],
    [
      redirect('/scheme', 302, { scheme: 'https' }),
      redirect('/scheme-and-host', 302, { host: 'example.org', scheme: 'https' }),
      redirect('/scheme-and-status', 301, { scheme: 'https' }),
      redirect('/scheme-and-host-and-status', 302, { scheme: 'https', host: 'example.org' }),
    ],
  ),
  routed(
    'HTTPRouteQueryParamMatching',
    SAME_NS,
    [infra('query-param-matching')],
    [
      to('/?animal=whale', V1),
      to('/?animal=dolphin', V2),
      to('/?animal=dolphin&color=blue', V3),
      to('/?ANIMAL=Whale', V3),
      to('/?animal=whale&otherparam=irrelevant', V1),
      to('/?animal=dolphin&color=yellow', V2),
      status('/?color=blue', 404),
      status('/?animal=dog', 404),
      status('/?animal=whaledolphin', 404),
      status('/', 404),
      to('/path1?animal=whale', V1),
      to('/?animal=whale', V2, { headers: { version: 'one' } }),
      to('/path2?animal=whale', V3, { headers: { version: 'two' } }),
      to('/path3?animal=shark', V1),
      to('/path4?animal=kraken', V1, { headers: { version: 'three' } }),
      status('/?animal=shark', 404),
      status('/path4?animal=kraken', 404),
      to('/path5?animal=hydra', V1),
      to('/?animal=hydra', V3, { headers: { version: 'four' } }),
    ],
  ),
  routed(
    'HTTPRouteMethodMatching',
    SAME_NS,
    [infra('method-matching')],
    [
      method('POST', '/', V1),
      method('GET', '/', V2),
      method('HEAD', '/', 404),
      method('GET', '/path1', V1),
      method('PUT', '/', V2, { version: 'one' }),
      method('POST', '/path2', V3, { version: 'two' }),
      method('PATCH', '/path3', V1),
      method('DELETE', '/path4', V1, { version: 'three' }),
      method('PUT', '/', 404),
      method('DELETE', '/path4', 404),
      method('PATCH', '/path5', V1),
      method('PATCH', '/', V2, { version: 'four' }),
    ],
  ),
  routed(
    'HTTPRouteResponseHeaderModifier',
    SAME_NS,
    [infra('response-header-modifier')],
    [
      responseHeaders(
        '/set',
        { 'Some-Other-Header': 'val' },
        { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
      ),
      responseHeaders(
        '/set',
        { 'Some-Other-Header': 'val', 'X-Header-Set': 'some-other-value' },
        { 'Some-Other-Header': 'val', 'X-Header-Set': 'set-overwrites-values' },
      ),
      responseHeaders(
        '/add',
        { 'Some-Other-Header': 'val' },
        { 'Some-Other-Header': 'val', 'X-Header-Add': 'add-appends-values' },
      ),
      responseHeaders(
        '/add',
        { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value' },
        { 'Some-Other-Header': 'val', 'X-Header-Add': 'some-other-value,add-appends-values' },
      ),
      responseHeaders('/remove', { 'X-Header-Remove': 'val' }, undefined, ['X-Header-Remove']),
      responseHeaders(
        '/multiple',
        {
          'X-Header-Set-2': 'set-val-2',
          'X-Header-Add-2': 'add-val-2',
          'X-Header-Remove-2': 'remove-val-2',
          'Another-Header': 'another-header-val',
          'X-Header-Remove-1': 'val',
        },
        {
          'X-Header-Set-1': 'header-set-1',
          'X-Header-Set-2': 'header-set-2',
          'X-Header-Add-1': 'header-add-1',
          'X-Header-Add-2': 'add-val-2,header-add-2',
          'X-Header-Add-3': 'header-add-3',
          'Another-Header': 'another-header-val',
        },
        ['X-Header-Remove-1', 'X-Header-Remove-2'],
      ),
      responseHeaders(
        '/case-insensitivity',
        {
          'x-header-set': 'original-val-set',
          'x-header-add': 'original-val-add',
          'x-header-remove': 'original-val-remove',
          'Another-Header': 'another-header-val',
        },
        {
          'X-Header-Set': 'header-set',
          'X-Header-Add': 'original-val-add,header-add',
          'X-Lowercase-Add': 'lowercase-add',
          'X-Mixedcase-Add-1': 'mixedcase-add-1',
          'X-Mixedcase-Add-2': 'mixedcase-add-2',
          'X-Uppercase-Add': 'uppercase-add',
          'Another-Header': 'another-header-val',
        },
        ['x-header-remove', 'X-Header-Remove'],
      ),
      {
        request: {
          path: '/response-and-request-header-modifiers',
          headers: { 'X-Header-Remove': 'remove-val', 'X-Header-Add-Append': 'append-val-1', 'X-Header-Echo': 'echo' },
        },
        backendSetResponseHeaders: {
          'X-Header-Set-2': 'set-val-2',
          'X-Header-Add-2': 'add-val-2',
          'X-Header-Remove-2': 'remove-val-2',
          'Another-Header': 'another-header-val',
          'X-Header-Remove-1': 'remove-val-1',
          'X-Header-Echo': 'echo',
        },
        expectedRequest: {
          path: '/response-and-request-header-modifiers',
          headers: {
            'X-Header-Add': 'header-val-1',
            'X-Header-Set': 'set-overwrites-values',
            'X-Header-Add-Append': 'append-val-1,header-val-2',
            'X-Header-Echo': 'echo',
          },
          absentHeaders: ['X-Header-Remove'],
        },
        response: {
          headers: {
            'X-Header-Set-1': 'header-set-1',
            'X-Header-Set-2': 'header-set-2',
            'X-Header-Add-1': 'header-add-1',
            'X-Header-Add-2': 'add-val-2,header-add-2',
            'Another-Header': 'another-header-val',
            'X-Header-Echo': 'echo',
          },
          absentHeaders: ['X-Header-Remove-1', 'X-Header-Remove-2'],
        },
        backend: V1,
        namespace: INFRA,
      },
    ],
  ),
];
