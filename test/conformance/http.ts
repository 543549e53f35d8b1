/**
 * Requests to a Gateway and the comparison of their answers, as gateway-api's conformance/utils/http does
 * (ExpectedResponse, MakeRequest, CompareRoundTrip, AwaitConvergence): a request is repeated until its answer
 * matches `threshold` times in a row within a time limit — the spec's eventual consistency, not a retry to hide a
 * failure: one mismatch after a match starts the count again, and the time limit fails the test.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { PeerCertificate } from 'node:tls';

/** Request is what to send (Go: http.Request). */
export interface Request {
  readonly host?: string;
  readonly method?: string;
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly unfollowRedirect?: boolean;
  /** HTTPS: the TLS server name, when not the host (Go: the serverName MakeTLSRequest… is given) */
  readonly serverName?: string;
  /** the TLS server name: of the client's HTTPS request, or (expected) the one the backend got */
  readonly sni?: string;
  /** expected: the client certificate (PEM) the backend's TLS got from the Gateway */
  readonly clientCert?: string;
}

/** ExpectedResponse is one case of a conformance test's table (Go: http.ExpectedResponse). */
export interface ExpectedResponse {
  readonly request: Request;
  /** what must reach the backend; the request itself when absent */
  readonly expectedRequest?: Partial<Request> & { readonly absentHeaders?: readonly string[] };
  readonly redirectRequest?: {
    readonly scheme?: string;
    readonly host?: string;
    readonly port?: string;
    readonly path?: string;
  };
  readonly backendSetResponseHeaders?: Readonly<Record<string, string>>;
  readonly response?: {
    readonly statusCode?: number;
    readonly statusCodes?: readonly number[];
    readonly headers?: Readonly<Record<string, string>>;
    /** each header's value must be one of these (Go: ValidHeaderValues) */
    readonly validHeaderValues?: Readonly<Record<string, readonly string[]>>;
    /** compare the response headers without spaces (Go: IgnoreWhitespace) */
    readonly ignoreWhitespace?: boolean;
    readonly absentHeaders?: readonly string[];
  };
  /** the pod name's prefix (a Deployment's name) that must have answered */
  readonly backend?: string;
  readonly namespace?: string;
  readonly testCaseName?: string;
  /** the backends (Service name and namespace) that must also get the request, mirrored */
  readonly mirroredTo?: readonly { readonly name: string; readonly namespace: string; readonly percent?: number }[];
}

const REQUEST_ID = 'gateway-api-conformance-request-id';

/** addQueryParam sets one query parameter of a path, the query re-encoded sorted as Go's url.Values.Encode does. */
function addQueryParam(path: string, name: string, value: string): string {
  const at = path.indexOf('?');
  const query = new URLSearchParams(at < 0 ? '' : path.slice(at + 1));
  query.set(name, value);
  query.sort();
  return `${at < 0 ? path : path.slice(0, at)}?${query}`;
}

/** withRequestId is AddRequestIDQueryParam: the request (and the expected request) get a unique query parameter. */
export function withRequestId(e: ExpectedResponse, id: string): ExpectedResponse {
  const path = addQueryParam(e.request.path, REQUEST_ID, id);
  const expectedRequest = e.expectedRequest
    ? {
        ...e.expectedRequest,
        path: e.expectedRequest.path ? addQueryParam(e.expectedRequest.path, REQUEST_ID, id) : path,
      }
    : undefined;
  return { ...e, request: { ...e.request, path }, ...(expectedRequest ? { expectedRequest } : {}) };
}

/** Target is where a Gateway listener is reached: the address from its status and nginx's port for it. */
export interface Target {
  readonly address: string;
  /** the listener's port as written (80, 443, 8080 …): the Host header leaves 80/443 out, as Go's client does */
  readonly listenerPort: number;
  readonly port: number;
  readonly scheme: 'http' | 'https';
  /** HTTPS: the certificate to trust */
  readonly ca?: string;
}

interface Captured {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** send makes one request, never following a redirect. */
export function send(target: Target, req: Request, extraHeaders: Record<string, string>): Promise<Captured> {
  const defaultPort = target.scheme === 'http' ? 80 : 443;
  const host =
    req.host ?? (target.listenerPort === defaultPort ? target.address : `${target.address}:${target.listenerPort}`);
  const headers = { ...extraHeaders, ...(req.headers ?? {}), host };
  const options = {
    host: target.address,
    port: target.port,
    method: req.method ?? 'GET',
    path: req.path,
    headers,
    timeout: 10_000,
    agent: false as const,
  };
  return new Promise((resolve, reject) => {
    const done = (res: import('node:http').IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', reject);
    };
    const r =
      target.scheme === 'https'
        ? httpsRequest(
            {
              ...options,
              servername: req.serverName ?? req.sni ?? (req.host ?? target.address).replace(/:\d+$/, ''),
              // Go trusts a certificate of RootCAs itself, whoever issued it (a TLSRoute's backend's, passed through)
              ...(target.ca ? { ca: target.ca, allowPartialTrustChain: true } : {}),
              // Go's name check, not node's: the suite's certificates name `*.org`, which node refuses
              checkServerIdentity: goVerifyHostname,
            },
            done,
          )
        : httpRequest(options, done);
    r.on('timeout', () => r.destroy(new Error('request timed out')));
    r.on('error', reject);
    r.end();
  });
}

/**
 * goVerifyHostname is Go's x509 Certificate.VerifyHostname, as crypto/tls runs it on the ServerName: an IP address
 * against the IP SANs; a name, lower case and without a trailing dot, against each DNS SAN with as many labels, a
 * leftmost `*` standing for exactly one label (so `*` alone matches no name with a dot, `*.org` matches `a.org`).
 */
export function goVerifyHostname(host: string, cert: PeerCertificate): Error | undefined {
  const sans = (cert.subjectaltname ?? '').split(', ').filter((s) => s !== '');
  if (isIP(host) !== 0) {
    const ips = sans.filter((s) => s.startsWith('IP Address:')).map((s) => s.slice('IP Address:'.length));
    return ips.includes(host) ? undefined : new Error(`x509: certificate is not valid for IP ${host}`);
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  const labels = name.split('.');
  const matches = (pattern: string) => {
    const parts = pattern.toLowerCase().split('.');
    if (name === '' || parts.length !== labels.length) return false;
    return parts.every((p, i) => (i === 0 && p === '*') || p === labels[i]);
  };
  const names = sans.filter((s) => s.startsWith('DNS:')).map((s) => s.slice('DNS:'.length));
  return names.some(matches) ? undefined : new Error(`x509: certificate is valid for ${names.join(', ')}, not ${host}`);
}

interface EchoBody {
  path: string;
  host: string;
  method: string;
  headers: Record<string, string[]>;
  namespace: string;
  pod: string;
  /** an HTTPS pod's TLSAssertions */
  tls?: { serverName: string; peerCertificates?: string[] };
}

const REDIRECTS = new Set([300, 301, 302, 303, 304, 305, 307, 308]);

/** compare is CompareRoundTrip: null when the answer matches, else why not. */
export function compare(expected: ExpectedResponse, got: Captured): string | null {
  const codes = [...(expected.response?.statusCodes ?? [])];
  if (expected.response?.statusCode !== undefined && !codes.includes(expected.response.statusCode))
    codes.push(expected.response.statusCode);
  if (codes.length === 0) codes.push(200);
  // a timeout answer (408, 504) matches when any timeout answer is expected
  const timeout = (code: number) => code === 408 || code === 504;
  if (timeout(got.status) && codes.some(timeout)) return null;
  if (!codes.includes(got.status)) return `expected status code one of ${codes}, got ${got.status}`;
  const headerOf = (name: string) => {
    const v = got.headers[name.toLowerCase()];
    return v === undefined ? undefined : Array.isArray(v) ? v.join(',') : String(v);
  };
  if (got.status === 200 || got.status === 204) {
    // Go reads the body only when it is JSON; otherwise it assumes the request was made as sent (a CORS preflight
    // answered by the Gateway itself): the method only, no path, namespace, headers or pod
    let echo: EchoBody = {
      path: '',
      host: '',
      method: expected.request.method ?? 'GET',
      headers: {},
      namespace: '',
      pod: '',
    };
    if (got.headers['content-type'] === 'application/json') {
      try {
        echo = JSON.parse(got.body) as EchoBody;
      } catch {
        return `the answer is not an echo pod's JSON: ${got.body.slice(0, 200)}`;
      }
    }
    // Go: the expected request replaces the request as a whole when given
    const want: Partial<Request> = expected.expectedRequest ?? expected.request;
    // Go: without an expected request the request itself is expected, its method included (GET when unset)
    const method = want.method ?? 'GET';
    if (expected.expectedRequest?.host && expected.expectedRequest.host !== echo.host)
      return `expected host ${expected.expectedRequest.host}, got ${echo.host}`;
    if (want.path !== echo.path) return `expected path ${want.path}, got ${echo.path}`;
    if (method !== echo.method) return `expected method ${method}, got ${echo.method}`;
    if ((expected.namespace ?? '') !== echo.namespace)
      return `expected namespace ${expected.namespace ?? ''}, got ${echo.namespace}`;
    const seen = new Map(Object.entries(echo.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v.join(',')]));
    for (const [name, value] of Object.entries(want.headers ?? {})) {
      const actual = seen.get(name.toLowerCase());
      if (actual === undefined) return `expected request header ${name} to be set`;
      if (actual !== value) return `expected request header ${name} = ${value}, got ${actual}`;
    }
    const spaceless = (v: string) => (expected.response?.ignoreWhitespace ? v.replaceAll(' ', '') : v);
    for (const [name, values] of Object.entries(expected.response?.validHeaderValues ?? {})) {
      const actual = headerOf(name);
      if (actual === undefined) return `expected response header ${name} to be set`;
      if (!values.map(spaceless).includes(spaceless(actual)))
        return `expected response header ${name} to be one of ${JSON.stringify(values)}, got ${actual}`;
    }
    for (const [name, value] of Object.entries(expected.response?.headers ?? {})) {
      const actual = headerOf(name);
      if (actual === undefined) return `expected response header ${name} to be set`;
      if (spaceless(actual) !== spaceless(value)) return `expected response header ${name} = ${value}, got ${actual}`;
    }
    for (const name of expected.response?.absentHeaders ?? [])
      if (headerOf(name) !== undefined) return `expected response header ${name} to be absent, got ${headerOf(name)}`;
    for (const name of expected.expectedRequest?.absentHeaders ?? [])
      if (seen.has(name.toLowerCase())) return `expected request header ${name} to be absent, got ${seen.get(name)}`;
    if (!echo.pod.startsWith(expected.backend ?? '')) return `expected pod ${expected.backend}…, got ${echo.pod}`;
    // Go reads cReq.TLS.ServerName: the SNI the backend's TLS got (BackendTLSPolicy)
    const sni = expected.expectedRequest?.sni;
    if (sni && sni !== echo.tls?.serverName) return `expected SNI ${sni}, got ${echo.tls?.serverName ?? 'no TLS'}`;
    // Go: slices.Contains(cReq.TLS.PeerCertificates, ClientCert), PEM compared without its line breaks
    const bare = (pem: string) => pem.replace(/\s/g, '');
    const clientCert = expected.expectedRequest?.clientCert;
    if (clientCert && !(echo.tls?.peerCertificates ?? []).some((c) => bare(c) === bare(clientCert)))
      return 'the backend did not get the expected client certificate';
  } else if (REDIRECTS.has(got.status) && expected.redirectRequest) {
    const location = headerOf('location');
    if (!location) return 'a redirect without Location';
    const url = new URL(location, 'http://relative.invalid');
    const scheme = url.protocol.replace(/:$/, '');
    const want = expected.redirectRequest;
    if ((want.host ?? url.hostname) !== url.hostname) return `expected redirect host ${want.host}, got ${url.hostname}`;
    if (want.port === undefined || want.port === '') {
      if (scheme === 'http' && url.port !== '' && url.port !== '80')
        return `expected no redirect port (or 80) for http, got ${url.port}`;
      if (scheme === 'https' && url.port !== '' && url.port !== '443')
        return `expected no redirect port (or 443) for https, got ${url.port}`;
    } else if (want.port !== url.port) return `expected redirect port ${want.port}, got ${url.port}`;
    if ((want.scheme ?? 'http') !== scheme) return `expected redirect scheme ${want.scheme ?? 'http'}, got ${scheme}`;
    const path = want.path ?? expected.request.path.split('?')[0];
    if (path !== url.pathname) return `expected redirect path ${path}, got ${url.pathname}`;
  }
  return null;
}

/** Timing is the suite's convergence settings (Go: RequiredConsecutiveSuccesses, MaxTimeToConsistency). */
export interface Timing {
  readonly threshold: number;
  readonly maxMs: number;
  /** the pause after a failed attempt (Go: one second) */
  readonly delayMs: number;
}

/** expectEventually sends `expected.request` until `threshold` answers in a row match it, or throws at maxMs. */
export async function expectEventually(target: Target, expected: ExpectedResponse, timing: Timing): Promise<void> {
  const setHeaders = Object.entries(expected.backendSetResponseHeaders ?? {})
    .map(([k, v]) => `${k}:${v}`)
    .join(',');
  const started = Date.now();
  let successes = 0;
  let last = 'no attempt';
  let attempts = 0;
  while (Date.now() - started < timing.maxMs) {
    attempts++;
    try {
      const got = await send(target, expected.request, { 'X-Echo-Set-Header': setHeaders });
      const why = compare(expected, got);
      if (why === null) {
        if (++successes >= timing.threshold) return;
        continue;
      }
      last = why;
    } catch (error) {
      last = `request failed: ${(error as Error).message}`;
    }
    successes = 0;
    await new Promise((r) => setTimeout(r, timing.delayMs));
  }
  throw new Error(
    `${caseName(expected)}: no consistent answer after ${attempts} attempts in ${timing.maxMs} ms; last: ${last}`,
  );
}

/** expectFailure is MakeRequestAndExpectFailure: after the system settles, the request must not answer 200. */
export async function expectFailure(target: Target, expected: ExpectedResponse, timing: Timing): Promise<void> {
  const started = Date.now();
  let successes = 0;
  let last = 'no attempt';
  while (Date.now() - started < timing.maxMs) {
    try {
      const got = await send(target, expected.request, { 'X-Echo-Set-Header': '' });
      if (got.status === 200) throw new Error(`${caseName(expected)}: expected a failure, got 200`);
      if (got.status !== 408 && got.status !== 504 && ++successes >= 5) return;
      if (got.status !== 408 && got.status !== 504) continue;
      last = `status ${got.status}`;
    } catch (error) {
      if ((error as Error).message.includes('expected a failure')) throw error;
      last = (error as Error).message;
    }
    successes = 0;
    await new Promise((r) => setTimeout(r, timing.delayMs));
  }
  throw new Error(`${caseName(expected)}: not settled within ${timing.maxMs} ms; last: ${last}`);
}

/** caseName is GetTestCaseName. */
export function caseName(e: ExpectedResponse, i?: number): string {
  if (e.testCaseName) return e.testCaseName;
  const head = `${i ?? ''} request to '${e.request.host ?? ''}${e.request.path}'${e.request.headers ? ' with headers' : ''}`;
  return e.backend ? `${head} should go to ${e.backend}` : `${head} should receive ${e.response?.statusCode ?? 200}`;
}
