/**
 * Validators: the only gate between a Kubernetes string and nginx.conf. Each one accepts a
 * value whole or rejects it with a reason; none of them repairs input. Every check is an
 * allow-list, so characters nginx treats specially (`;`, `{`, `}`, quotes, `$`, `#`, `\`,
 * white space, control characters) fail unless a field explicitly needs them.
 */

/** Checked is a validator's answer: the accepted (and typed) value, or why not. */
export type Checked<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly message: string };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = (message: string): Checked<never> => ({ ok: false, message });

/** show quotes a rejected value for a problem message, short and printable. */
export function show(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  // JSON escapes the C0 controls but leaves DEL, the C1 controls and the line separators as they are: escaped too, so
  // a value shown in a message can never break or hide part of its line
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text).replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** checkDnsLabel accepts an RFC 1123 label: a namespace or a Service name. */
export function checkDnsLabel(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0) return fail('must be a non-empty string');
  if (value.length > 63 || !DNS_LABEL.test(value)) {
    return fail(`${show(value)} is not a valid DNS label (lower-case letters, digits and '-', at most 63)`);
  }
  return ok(value);
}

/** checkObjectName accepts an RFC 1123 subdomain, as most object names are (a Secret's, say). */
export function checkObjectName(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0) return fail('must be a non-empty string');
  if (value.length > 253 || !value.split('.').every((label) => label.length <= 63 && DNS_LABEL.test(label))) {
    return fail(`${show(value)} is not a valid object name (RFC 1123 subdomain)`);
  }
  return ok(value);
}

/** checkHost accepts an Ingress host: an RFC 1123 subdomain, optionally `*.` and one, not an IP. */
export function checkHost(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0) return fail('must be a non-empty string');
  const bare = value.startsWith('*.') ? value.slice(2) : value;
  const labels = bare.split('.');
  const valid =
    value.length <= 253 && labels.every((label) => label.length > 0 && label.length <= 63 && DNS_LABEL.test(label));
  if (!valid) {
    return fail(`${show(value)} is not a valid host (lower-case RFC 1123 name, optionally starting with '*.')`);
  }
  if (value.startsWith('*.') && labels.length < 2)
    return fail(`${show(value)}: a wildcard needs at least two labels after '*.'`);
  if (checkIp(value).ok) return fail(`${show(value)}: an IP address is not allowed as a host`);
  return ok(value);
}

/**
 * checkGatewayHostname accepts a Gateway API Hostname (a listener's, a route's): checkHost's, and also a wildcard
 * before one label (`*.com`), which the API's pattern allows and its conformance tests use.
 */
export function checkGatewayHostname(value: unknown): Checked<string> {
  if (typeof value === 'string' && /^\*\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value)) return ok(value);
  return checkHost(value);
}

/** Path characters nginx needs no quoting or decoding for: RFC 3986 unreserved plus a few sub-delims. */
const PATH = /^\/[A-Za-z0-9._~!&()*+,=:@/-]*$/;

/** checkPath accepts an absolute Ingress path of plain characters, without `.` or `..` segments or `//`. */
export function checkPath(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0) return fail('must be a non-empty string');
  if (!value.startsWith('/')) return fail(`${show(value)} must start with '/'`);
  if (value.length > 2048) return fail('is longer than 2048 characters');
  if (!PATH.test(value)) {
    return fail(`${show(value)} has characters outside A-Z a-z 0-9 and / . _ ~ - ! & ( ) * + , = : @`);
  }
  if (value.includes('//') || value.split('/').some((seg) => seg === '.' || seg === '..')) {
    return fail(`${show(value)} has an empty, '.' or '..' segment, which nginx would normalise away`);
  }
  return ok(value);
}

/** checkPathType accepts Exact and Prefix, and maps ImplementationSpecific to Prefix as ingress-nginx does. */
export function checkPathType(value: unknown): Checked<'Exact' | 'Prefix'> {
  if (value === 'Exact' || value === 'Prefix') return ok(value);
  if (value === 'ImplementationSpecific' || value === undefined) return ok('Prefix');
  return fail(`${show(value)} is not one of Exact, Prefix, ImplementationSpecific`);
}

/** checkPortNumber accepts 1..65535. */
export function checkPortNumber(value: unknown): Checked<number> {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    return fail(`${show(value)} is not a port number (1-65535)`);
  }
  return ok(value);
}

/** checkPortName accepts an IANA service name, as a named Service port is. */
export function checkPortName(value: unknown): Checked<string> {
  if (
    typeof value !== 'string' ||
    value.length > 15 ||
    !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(value) ||
    !/[a-z]/.test(value)
  ) {
    return fail(`${show(value)} is not a valid port name (IANA service name)`);
  }
  return ok(value);
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function isIpv6(value: string): boolean {
  if (!/^[0-9a-fA-F:.]+$/.test(value) || value.length > 45) return false;
  const halves = value.split('::');
  if (halves.length > 2) return false;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0] ?? '');
  const tail = groups(halves[1] ?? '');
  const all = [...head, ...tail];
  let width = 0;
  for (const [i, group] of all.entries()) {
    if (i === all.length - 1 && group.includes('.')) {
      if (!IPV4.test(group)) return false;
      width += 2;
    } else if (/^[0-9a-fA-F]{1,4}$/.test(group)) {
      width += 1;
    } else {
      return false;
    }
  }
  return halves.length === 2 ? width < 8 : width === 8;
}

/** checkIp accepts an IPv4 or IPv6 address and says which. */
export function checkIp(value: unknown): Checked<{ address: string; family: 4 | 6 }> {
  if (typeof value === 'string' && value.length > 45) return fail(`${show(value)} is not an IP address`);
  if (typeof value === 'string' && IPV4.test(value)) return ok({ address: value, family: 4 });
  if (typeof value === 'string' && isIpv6(value)) return ok({ address: value.toLowerCase(), family: 6 });
  return fail(`${show(value)} is not an IP address`);
}

/** MAX_NGINX_BYTES is the largest size nginx parses (ngx_parse_size and ngx_parse_offset: 2^63 - 1 on 64 bits). */
export const MAX_NGINX_BYTES = 2n ** 63n - 1n;
const UNIT: Record<string, bigint> = { '': 1n, k: 1024n, m: 1024n ** 2n, g: 1024n ** 3n };

/** bytesOf reads `<digits>[unit]` (at most 24 characters, checked first) into bytes, or null. */
function bytesOf(value: unknown, units: string): { bytes: bigint; text: string } | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > 24) return null;
  const text = value.toLowerCase();
  const unit = /[a-z]$/.test(text) ? text.slice(-1) : '';
  const digits = unit === '' ? text : text.slice(0, -1);
  if (!units.includes(unit) || !/^\d{1,20}$/.test(digits)) return null;
  return { bytes: BigInt(digits) * UNIT[unit]!, text };
}

/** formatBytes spells a byte count as nginx's size directives read it (bytes, k or m), for messages. */
export function formatBytes(bytes: bigint): string {
  for (const unit of ['m', 'k'] as const)
    if (bytes >= UNIT[unit]! && bytes % UNIT[unit]! === 0n) return `${bytes / UNIT[unit]!}${unit}`;
  return String(bytes);
}

/**
 * checkSize accepts what nginx's size directives take (client_body_buffer_size,
 * proxy_buffer_size, client_header_buffer_size: ngx_parse_size): bytes, `k` or `m` (nginx reads
 * no `g` there), from `min` to `max` bytes and never past nginx's own limit.
 */
export function checkSize(value: unknown, min = 1n, max = MAX_NGINX_BYTES): Checked<string> {
  const size = bytesOf(value, 'km');
  const range = `from ${formatBytes(min)} to ${formatBytes(max < MAX_NGINX_BYTES ? max : MAX_NGINX_BYTES)}`;
  if (!size)
    return fail(`${show(value)} is not a size (a number, optionally followed by k or m; nginx reads no g here)`);
  if (size.bytes < min || size.bytes > max || size.bytes > MAX_NGINX_BYTES)
    return fail(`${show(value)} is not a size ${range}`);
  return ok(size.text);
}

/**
 * checkOffset accepts what nginx's offset directives take (client_max_body_size: ngx_parse_offset):
 * bytes, `k`, `m` or `g`, up to 2^63 - 1 bytes; 0 means no limit.
 */
export function checkOffset(value: unknown): Checked<string> {
  const size = bytesOf(value, 'kmg');
  if (!size || size.bytes > MAX_NGINX_BYTES)
    return fail(`${show(value)} is not a size (a number, optionally followed by k, m or g, at most 8589934591g)`);
  return ok(size.text);
}

/** offsetBytes is an offset checkOffset accepted (`8m`, `0`) in bytes. */
export function offsetBytes(text: string): bigint {
  const size = bytesOf(text, 'kmg');
  if (!size) throw new Error(`not an nginx offset: ${JSON.stringify(text)}`);
  return size.bytes;
}

/** The smallest large_client_header_buffers size nginx takes: connection_pool_size, 512 on 64 bits. */
export const MIN_LARGE_HEADER_BUFFER = 512n;

/**
 * checkBuffers accepts nginx's `number size` pair, as large-client-header-buffers: `4 8k` (1-9999 buffers of 512 bytes
 * or more).
 */
export function checkBuffers(value: unknown): Checked<{ number: number; size: string }> {
  const bad = fail(
    `${show(value)} is not 'number size' (e.g. '4 8k': 1-9999 buffers of 512 bytes or more, in bytes, k or m)`,
  );
  if (typeof value !== 'string' || value.length > 32) return bad;
  const [count = '', sizeText, ...rest] = value.split(' ');
  const size = checkSize(sizeText, MIN_LARGE_HEADER_BUFFER);
  if (rest.length > 0 || !/^\d{1,4}$/.test(count) || Number(count) < 1 || !size.ok) return bad;
  return ok({ number: Number(count), size: size.value });
}

/**
 * checkSeconds accepts a duration: whole seconds (`60`, as ingress-nginx's keys take) or an nginx time (`90s`, `2m`,
 * `500ms`).
 */
export function checkSeconds(value: unknown): Checked<string> {
  // Nine digits of days is 8.6e16 ms, inside ngx_parse_time's range (NGX_MAX_INT_T_VALUE).
  if (typeof value !== 'string' || value.length > 11)
    return fail(`${show(value)} is not a duration (at most 9 digits, then ms, s, m, h or d)`);
  if (/^\d{1,9}$/.test(value)) return ok(`${value}s`);
  if (typeof value === 'string' && /^\d{1,9}(ms|s|m|h|d)$/.test(value)) return ok(value);
  return fail(`${show(value)} is not a duration (seconds, or a number followed by ms, s, m, h or d)`);
}

/** checkPositiveInt accepts a whole number from 1 to max. */
export function checkPositiveInt(value: unknown, max = 2 ** 31 - 1): Checked<number> {
  if (typeof value === 'string' && value.length <= 10 && /^\d{1,10}$/.test(value)) {
    const n = Number(value);
    if (n >= 1 && n <= max) return ok(n);
  }
  return fail(`${show(value)} is not a whole number from 1 to ${max}`);
}

/** checkBool accepts what Go's strconv.ParseBool does, as ingress-nginx reads its keys. */
export function checkBool(value: unknown): Checked<boolean> {
  if (typeof value === 'string' && ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return ok(true);
  if (typeof value === 'string' && ['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return ok(false);
  return fail(`${show(value)} is not a boolean (true or false)`);
}

/** checkWorkerProcesses accepts `auto` or a count. */
export function checkWorkerProcesses(value: unknown): Checked<string> {
  if (value === 'auto') return ok('auto');
  const n = checkPositiveInt(value, 1024);
  return n.ok ? ok(String(n.value)) : fail(`${show(value)} is not 'auto' or a number of processes`);
}

const SSL_PROTOCOLS = ['SSLv2', 'SSLv3', 'TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/** checkSslProtocols accepts a space-separated list of nginx ssl_protocols names. */
export function checkSslProtocols(value: unknown): Checked<string[]> {
  if (typeof value !== 'string' || value.length > 256) return fail('must be a space-separated list of protocol names');
  const names = value.trim().split(/ +/);
  const unknown = names.filter((name) => !SSL_PROTOCOLS.includes(name));
  if (value.trim() === '' || unknown.length > 0) {
    return fail(`${show(value)} must be a space-separated list of ${SSL_PROTOCOLS.join(', ')}`);
  }
  return ok([...new Set(names)]);
}

/**
 * checkLogFormat accepts an nginx log_format string: printable ASCII (the quoting helper escapes
 * quotes and backslashes), whose `$` only ever starts a variable name.
 */
export function checkLogFormat(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0) return fail('must be a non-empty string');
  if (value.length > 4096) return fail('is longer than 4096 characters');
  if (!/^[\x20-\x7e]+$/.test(value)) return fail('may hold only printable ASCII characters (no newlines or tabs)');
  const dollars = value.match(/\$/g)?.length ?? 0;
  const variables = [...value.matchAll(/\$(?:([a-z_][a-z0-9_]*)|\{([a-z_][a-z0-9_]*)\})/gi)];
  if (dollars !== variables.length) return fail(`${show(value)}: every '$' must start a variable name`);
  // nginx refuses the whole config for a variable it does not know ("unknown variable").
  const unknown = variables.map((m) => (m[1] ?? m[2])!).find((name) => !isLogVariable(name));
  if (unknown !== undefined)
    return fail(
      `${show(value)}: $${unknown} is not a variable nginx has here (see LOG_VARIABLES in src/model/validate.ts)`,
    );
  return ok(value);
}

/**
 * LOG_VARIABLES are the variables a log format may name: nginx 1.22's own (core, upstream, SSL, real IP, proxy,
 * gzip, HTTP/2) and those nginx.conf defines ($proxy_upstream_name, the forwarded-header maps, and ingress-nginx's
 * $req_id and $proxy_alternative_upstream_name, so its log formats work as they are).
 */
export const LOG_VARIABLES: readonly string[] = (
  'args binary_remote_addr body_bytes_sent bytes_sent connection connection_requests connection_time ' +
  'content_length content_type document_root document_uri host hostname https is_args limit_rate msec ' +
  'nginx_version pid pipe proxy_protocol_addr proxy_protocol_port proxy_protocol_server_addr ' +
  'proxy_protocol_server_port query_string realpath_root remote_addr remote_port remote_user request ' +
  'request_body request_body_file request_completion request_filename request_id request_length request_method ' +
  'request_time request_uri scheme server_addr server_name server_port server_protocol status time_iso8601 ' +
  'time_local uri tcpinfo_rtt tcpinfo_rttvar tcpinfo_snd_cwnd tcpinfo_rcv_space ' +
  'upstream_addr upstream_bytes_received upstream_bytes_sent upstream_cache_status upstream_connect_time ' +
  'upstream_header_time upstream_response_length upstream_response_time upstream_status ' +
  'ssl_cipher ssl_ciphers ssl_client_escaped_cert ssl_client_cert ssl_client_fingerprint ssl_client_i_dn ' +
  'ssl_client_s_dn ssl_client_serial ssl_client_verify ssl_client_v_start ssl_client_v_end ssl_client_v_remain ' +
  'ssl_curves ssl_early_data ssl_protocol ssl_server_name ssl_session_id ssl_session_reused ssl_alpn_protocol ' +
  'realip_remote_addr realip_remote_port proxy_host proxy_port proxy_add_x_forwarded_for gzip_ratio http2 ' +
  'proxy_upstream_name full_x_forwarded_for best_http_host pass_access_scheme pass_server_port ' +
  'connection_upgrade req_id proxy_alternative_upstream_name'
).split(' ');

/** The families of variables named after a header, cookie or argument. */
const LOG_VARIABLE_PREFIXES = [
  'http_',
  'sent_http_',
  'sent_trailer_',
  'cookie_',
  'arg_',
  'upstream_http_',
  'upstream_cookie_',
  'upstream_trailer_',
];

const isLogVariable = (name: string) => {
  const lower = name.toLowerCase();
  return (
    LOG_VARIABLES.includes(lower) || LOG_VARIABLE_PREFIXES.some((p) => lower.startsWith(p) && lower.length > p.length)
  );
};

/** checkFilePath accepts a plain file path (absolute, or relative to nginx's prefix) without `..`. */
export function checkFilePath(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length > 1024 || !/^\/?[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(value)) {
    return fail(`${show(value)} is not a plain file path (letters, digits, '.', '_', '-' and '/')`);
  }
  if (value.split('/').includes('..')) return fail(`${show(value)} may not contain '..'`);
  return ok(value);
}

/**
 * checkAccessLogPath accepts where the access log may go: `/dev/stdout` (nginx's), or a
 * file right in the config folder's `logs/` (`logs/access.log`). nginx's master opens it as root, so any other absolute path would let a ConfigMap
 * write over a file of the host (`/etc/cron.d/x`). `/dev/stderr` is refused: nginx's stderr is
 * the socket the controller reads nginx's error log from, which nginx cannot open() ("No such
 * device or address"), so `nginx -t` would refuse the config.
 */
export function checkAccessLogPath(value: unknown): Checked<string> {
  if (value === '/dev/stdout') return ok(value);
  // ingress-nginx's default, a link to /dev/stdout in its image: a ConfigMap that names it means the pod's log.
  if (value === '/var/log/nginx/access.log') return ok('/dev/stdout');
  if (value === '/dev/stderr')
    return fail(
      '"/dev/stderr" cannot be opened by nginx here (its stderr is the controller\'s socket for the error log); ' +
        'use /dev/stdout',
    );
  const plain = checkFilePath(value);
  if (!plain.ok) return plain;
  const segments = plain.value.split('/');
  if (segments[0] !== 'logs' || segments.length < 2 || segments.some((s) => s === '.' || s === '')) {
    return fail(`${show(value)} must be /dev/stdout or a file under logs/ (relative to the config folder)`);
  }
  // Nobody makes a folder below logs/, and nginx cannot open a file in one that is missing: nginx -t would refuse.
  if (segments.length > 2)
    return fail(`${show(value)}: the file must be right in logs/ (nginx cannot open a file in a missing folder)`);
  return ok(plain.value);
}

const ERROR_LOG_LEVELS = ['debug', 'info', 'notice', 'warn', 'error', 'crit', 'alert', 'emerg'];

/** checkErrorLogLevel accepts an nginx error_log level. */
export function checkErrorLogLevel(value: unknown): Checked<string> {
  if (typeof value === 'string' && ERROR_LOG_LEVELS.includes(value)) return ok(value);
  return fail(`${show(value)} is not one of ${ERROR_LOG_LEVELS.join(', ')}`);
}

function v4Bits(address: string): bigint {
  return address.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function v6Bits(address: string): bigint {
  const [head = '', tail = ''] = address.includes('::') ? address.split('::') : [address, ''];
  const groups = (part: string): bigint[] =>
    part === ''
      ? []
      : part
          .split(':')
          .flatMap((g) => (g.includes('.') ? [v4Bits(g) >> 16n, v4Bits(g) & 0xffffn] : [BigInt(parseInt(g, 16))]));
  const h = groups(head);
  const t = groups(tail);
  const all = [...h, ...Array<bigint>(8 - h.length - t.length).fill(0n), ...t];
  return all.reduce((acc, g) => (acc << 16n) | g, 0n);
}

/** checkCidr accepts an IP or a CIDR without host bits set (nginx would only warn, and mean the network). */
export function checkCidr(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length > 49) return fail(`${show(value)} is not an IP address or CIDR`);
  const [address, prefix, ...rest] = value.split('/');
  const ip = checkIp(address);
  if (!ip.ok || rest.length > 0) return fail(`${show(value)} is not an IP address or CIDR`);
  if (prefix === undefined) return ok(ip.value.address);
  const width = ip.value.family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > width) return fail(`${show(value)} has an invalid prefix length`);
  const bits = ip.value.family === 4 ? v4Bits(ip.value.address) : v6Bits(ip.value.address);
  const hostBits = BigInt(width - Number(prefix));
  if ((bits & ((1n << hostBits) - 1n)) !== 0n) return fail(`${show(value)} has host bits set after the prefix`);
  return ok(`${ip.value.address}/${Number(prefix)}`);
}

/** checkCidrList accepts a comma-separated list of IPs and CIDRs, as the *-source-range annotations take. */
export function checkCidrList(value: unknown): Checked<string[]> {
  if (typeof value !== 'string' || value.length > 65536 || value.trim() === '')
    return fail('must be a comma-separated list of CIDRs (at most 64 KiB)');
  const out: string[] = [];
  for (const part of value.split(',')) {
    const cidr = checkCidr(part.trim());
    if (!cidr.ok) return cidr;
    if (!out.includes(cidr.value)) out.push(cidr.value);
  }
  return ok(out);
}

/** checkHeaderName accepts an HTTP header name nginx exposes as `$http_<name>` (no `_`: nginx drops such headers). */
export function checkHeaderName(value: unknown): Checked<string> {
  if (typeof value === 'string' && value.length <= 64 && /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/.test(value))
    return ok(value);
  return fail(`${show(value)} is not a header name (letters, digits and '-')`);
}

/** checkHostPort accepts a host name or IP, optionally with `:port`, as a Host header is. */
export function checkHostPort(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0 || value.length > 261)
    return fail('must be a host name, optionally with :port');
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(value);
  const host = match?.[1] ?? '';
  const port = match?.[2];
  const hostOk = host.startsWith('[')
    ? checkIp(host.slice(1, -1)).ok
    : checkIp(host).ok || checkObjectName(host.toLowerCase()).ok;
  if (!match || !hostOk || (port !== undefined && !checkPortNumber(Number(port)).ok)) {
    return fail(`${show(value)} is not a host name or IP, optionally with :port`);
  }
  return ok(value.toLowerCase());
}

/**
 * checkHttpUrl accepts an absolute http(s) URL of plain characters: a host (name or IP), an
 * optional port, path and query. No `$` (nginx would expand it), quotes, spaces or `\`.
 */
export function checkHttpUrl(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length > 2048) return fail('must be an http or https URL');
  const match = /^https?:\/\/([^/?#]+)([/?][A-Za-z0-9._~!&()*+,=:@/?%-]*)?$/.exec(value);
  if (!match || !checkHostPort(match[1]).ok) {
    return fail(`${show(value)} is not an http(s) URL of plain characters (no '$', quotes or spaces)`);
  }
  return ok(value);
}
