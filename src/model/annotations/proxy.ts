import type { ProxySettings } from '../nginx-model.js';
import { checkSeconds, checkSize, type Checked } from '../validate.js';
import { intIn, noteWithout, oneOf, read } from './read.js';
import type { AnnotationGroup, AnnotationInput } from './types.js';

/**
 * The largest proxy buffer nginx takes while proxy_max_temp_file_size keeps its 1024m default (it must hold one
 * buffer).
 */
const MAX_PROXY_BUFFER = 1024n ** 3n;

const NEXT_UPSTREAM = [
  'error',
  'timeout',
  'invalid_header',
  'http_500',
  'http_502',
  'http_503',
  'http_504',
  'http_403',
  'http_404',
  'http_429',
  'non_idempotent',
  'off',
];

function checkNextUpstream(value: string): Checked<string[]> {
  if (value.length > 256) return { ok: false, message: 'is longer than 256 characters' };
  const words = value.trim().split(/\s+/);
  if (words.some((w) => !NEXT_UPSTREAM.includes(w)) || (words.includes('off') && words.length > 1)) {
    return {
      ok: false,
      message:
        `${JSON.stringify(value.slice(0, 80))} must be 'off' or ` +
        `a space-separated list of ${NEXT_UPSTREAM.slice(0, -1).join(', ')}`,
    };
  }
  return { ok: true, value: [...new Set(words)] };
}

const onOff = oneOf(['on', 'off'] as const, true);

/** The variables proxy-redirect-to may name: the request's own scheme and host. */
const SCHEME_VARIABLE = /\$scheme(?![A-Za-z0-9_])/g;
const HOST_VARIABLE = /\$(?:host|http_host|best_http_host)(?![A-Za-z0-9_])/g;

/**
 * REDIRECT_PREFIX is what proxy_redirect compares and writes, of plain characters: a path, or a host (with its
 * http(s) scheme, its port, and a path, each optional: ingress-nginx's own test rewrites `hello.com` to `goodbye.com`).
 */
const REDIRECT_PREFIX =
  /^(?:(?:https?:\/\/)?[A-Za-z0-9.-]+(?::\d{1,5})?(?:\/[A-Za-z0-9._~!&()*+,=:@/%-]*)?|\/[A-Za-z0-9._~!&()*+,=:@/%-]*)$/;

/**
 * checkRedirectUrl accepts a REDIRECT_PREFIX; `to` may also name the request's scheme and host.
 */
function checkRedirectUrl(variables: boolean): (value: string) => Checked<string> {
  return (value) => {
    // Checked with each variable in place of what it stands for, so it may only stand where that can.
    const plain = variables ? value.replace(SCHEME_VARIABLE, 'http').replace(HOST_VARIABLE, 'host.example') : value;
    const ok = value.length <= 2048 && REDIRECT_PREFIX.test(plain) && !plain.includes('$');
    return ok
      ? { ok: true, value }
      : {
          ok: false,
          message:
            `${JSON.stringify(value.slice(0, 80))} is not a path, host or ` +
            `http(s) URL of plain characters${variables ? ' ($scheme, $host, $http_host allowed)' : ''}`,
        };
  };
}

const kilobytes = intIn(0, 1 << 30);

/** readRedirect reads proxy-redirect-from and -to: null means `proxy_redirect off`, nginx.conf's default. */
function readRedirect(input: AnnotationInput): ProxySettings['redirect'] {
  const from = read(input, 'proxy-redirect-from', (v) =>
    v === 'off' || v === 'default' ? { ok: true, value: v } : checkRedirectUrl(false)(v),
  );
  const to = read(input, 'proxy-redirect-to', checkRedirectUrl(true));
  if (from === undefined || from === 'off') {
    noteWithout(input, ['proxy-redirect-to'], 'proxy-redirect-from');
    return null;
  }
  if (from === 'default') return { from, to: null };
  if (to === undefined) {
    if (input.get('proxy-redirect-to') === undefined) input.invalid('proxy-redirect-from', 'needs proxy-redirect-to');
    return null;
  }
  return { from, to };
}

/** proxyGroup is the Proxy group of ingress-nginx: per-location proxy_* settings. */
export const proxyGroup: AnnotationGroup<'proxy'> = {
  name: 'Proxy',
  field: 'proxy',
  keys: [
    {
      key: 'proxy-connect-timeout',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_connect_timeout (seconds; grpc_connect_timeout for gRPC)',
    },
    {
      key: 'proxy-send-timeout',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_send_timeout (seconds; grpc_send_timeout for gRPC)',
    },
    {
      key: 'proxy-read-timeout',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_read_timeout (seconds; grpc_read_timeout for gRPC)',
    },
    {
      key: 'proxy-buffering',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_buffering on|off (off by default, as ingress-nginx)',
    },
    {
      key: 'proxy-buffer-size',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_buffer_size, and the size of proxy_buffers (nginx wants them to agree): 1 byte to 1024m',
    },
    {
      key: 'proxy-buffers-number',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'the number of proxy_buffers (3-1024, default 4)',
    },
    {
      key: 'proxy-next-upstream',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_next_upstream: when to try another endpoint',
    },
    {
      key: 'proxy-next-upstream-tries',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_next_upstream_tries',
    },
    {
      key: 'proxy-next-upstream-timeout',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_next_upstream_timeout (seconds)',
    },
    {
      key: 'proxy-http-version',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_http_version 1.0 or 1.1',
    },
    {
      key: 'proxy-request-buffering',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_request_buffering on|off',
    },
    {
      key: 'proxy-redirect-from',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_redirect: `default`, `off` (the default), or the Location prefix to rewrite to proxy-redirect-to',
    },
    {
      key: 'proxy-redirect-to',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'what proxy-redirect-from becomes in Location and Refresh headers',
    },
    {
      key: 'limit-rate',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc:
        'limit_rate: kilobytes per second sent to each client (0: no limit); needs proxy-buffering "on", which ' +
        'nginx paces',
    },
    {
      key: 'limit-rate-after',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'limit_rate_after: kilobytes sent before limit-rate applies',
    },
  ],
  parse(input) {
    const size = read(input, 'proxy-buffer-size', (v) => checkSize(v, 1n, MAX_PROXY_BUFFER)) ?? null;
    // 3 at least: nginx wants the busy buffers (twice the size) below all buffers but one.
    const number = read(input, 'proxy-buffers-number', intIn(3, 1024)) ?? null;
    const settings: ProxySettings = {
      connectTimeout: read(input, 'proxy-connect-timeout', checkSeconds) ?? null,
      sendTimeout: read(input, 'proxy-send-timeout', checkSeconds) ?? null,
      readTimeout: read(input, 'proxy-read-timeout', checkSeconds) ?? null,
      buffering: read(input, 'proxy-buffering', onOff) ?? null,
      buffers:
        size === null && number === null
          ? null
          : { number: number ?? input.config.proxyBuffersNumber, size: size ?? input.config.proxyBufferSize },
      nextUpstream: read(input, 'proxy-next-upstream', checkNextUpstream) ?? null,
      nextUpstreamTries: read(input, 'proxy-next-upstream-tries', intIn(0, 1000)) ?? null,
      nextUpstreamTimeout: read(input, 'proxy-next-upstream-timeout', checkSeconds) ?? null,
      httpVersion: read(input, 'proxy-http-version', oneOf(['1.0', '1.1'] as const)) ?? null,
      requestBuffering: read(input, 'proxy-request-buffering', onOff) ?? null,
      redirect: readRedirect(input),
      limitRate: read(input, 'limit-rate', kilobytes) ?? null,
      limitRateAfter: read(input, 'limit-rate-after', kilobytes) ?? null,
    };
    // Measured: nginx 1.22 paces only buffered answers; an unbuffered one goes out at full speed.
    if (settings.limitRate && settings.buffering !== 'on')
      input.note('limit-rate', 'takes effect only with proxy-buffering "on" (nginx does not pace unbuffered answers)');
    return Object.values(settings).every((v) => v === null) ? null : settings;
  },
};
