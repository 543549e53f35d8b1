/**
 * The snippet allow-list. A snippet is read into plain directives (src/model/nginx-tokens.ts),
 * and each must be on the list for its context, with the right number of arguments, each
 * argument checked, and only the variables of SAFE_VARIABLES. What passes is kept as directive
 * name (the list's own spelling) and arguments, which the template prints through the quoting
 * helper, so nginx reads exactly what was checked. Nothing on the list reaches another location
 * (no `rewrite … last`, error_page, try_files), opens a listener, touches a file, loads content
 * or changes the server for other Ingresses on the host.
 */
import { parseNginxStatements, variablesIn } from './nginx-tokens.js';
import { regexSubsetRefusal } from './regex-path.js';
import type { NginxModules } from './machine-settings.js';
import type { SnippetDirective } from './nginx-model.js';
import { checkCidr, checkHeaderName, type Checked } from './validate.js';
import { OPTIONAL_MODULES } from './optional-modules.js';

/**
 * SnippetContext is where a snippet goes: configuration-snippet in each location, server-snippet in the host's server.
 */
export type SnippetContext = 'location' | 'server';

export type { SnippetDirective };

/**
 * SAFE_VARIABLES are the nginx variables a snippet's values may read: what the request says
 * about itself and the client, none of the controller's own (`$ia_*`, `$proxy_upstream_name`)
 * and nothing about TLS keys or files. `$1`…`$9` (regex captures) are allowed too.
 */
export const SAFE_VARIABLES: readonly string[] = [
  'host',
  'remote_addr',
  'remote_port',
  'scheme',
  'https',
  'request_uri',
  'uri',
  'document_uri',
  'args',
  'query_string',
  'is_args',
  'request_id',
  'request_method',
  'request_length',
  'server_name',
  'server_port',
  'server_protocol',
  'time_iso8601',
  'time_local',
  'msec',
  'proxy_add_x_forwarded_for',
  'pass_access_scheme',
  'full_x_forwarded_for',
  'best_http_host',
  'status',
  'content_type',
  'content_length',
];
/** SAFE_VARIABLE_PREFIXES are the families of request and answer variables a value may read. */
export const SAFE_VARIABLE_PREFIXES: readonly string[] = ['http_', 'arg_', 'cookie_', 'sent_http_', 'upstream_http_'];

const isSafeVariable = (name: string) =>
  /^[0-9]$/.test(name) ||
  SAFE_VARIABLES.includes(name) ||
  SAFE_VARIABLE_PREFIXES.some(
    (p) => name.startsWith(p) && /^[a-z0-9_]+$/.test(name.slice(p.length)) && name.length > p.length,
  );

const MAX_VALUE = 1024;

/** checkValue accepts printable ASCII text of at most 1024 characters whose variables are all safe. */
export function checkValue(value: string): string | null {
  if (value.length > MAX_VALUE) return `a value is longer than ${MAX_VALUE} characters`;
  if (!/^[\x20-\x7e]*$/.test(value))
    return `${JSON.stringify(value.slice(0, 64))} holds a character other than printable ASCII`;
  const names = variablesIn(value);
  if (!names.ok) return names.message;
  const bad = names.value.find((n) => !isSafeVariable(n));
  return bad === undefined ? null : `the variable $${bad} is not one snippets may read (see docs/annotations.md)`;
}

const oneOf =
  (...words: string[]) =>
  (v: string) =>
    words.includes(v) ? null : `${JSON.stringify(v.slice(0, 64))} is not ${words.join(' or ')}`;
const header = (v: string) =>
  checkHeaderName(v).ok ? null : `${JSON.stringify(v.slice(0, 64))} is not a header name (letters, digits and '-')`;
const SCALE: Readonly<Record<string, number>> = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 };
/** size accepts an nginx size that fits nginx's off_t (a 10-digit number of gigabytes does not). */
const size = (v: string) => {
  const match = /^(\d{1,10})([kKmMgG]?)$/.exec(v);
  if (match && Number(match[1]) * SCALE[match[2]!.toLowerCase()]! < 2 ** 62) return null;
  return `${JSON.stringify(v.slice(0, 64))} is not a size (a number, optionally followed by k, m or g)`;
};
const time = (v: string) =>
  /^\d{1,9}(ms|s|m|h|d)?$/.test(v)
    ? null
    : `${JSON.stringify(v.slice(0, 64))} is not a time (a number, optionally followed by ms, s, m, h or d)`;

/**
 * checkRegex accepts the regular expressions of regexSubsetRefusal's subset (PCRE2 and JavaScript read them alike),
 * without named groups (which set variables).
 */
export function checkRegex(v: string): string | null {
  const shown = JSON.stringify(v.slice(0, 64));
  if (v.length === 0 || v.length > MAX_VALUE)
    return `${shown} is not a regular expression of 1 to ${MAX_VALUE} characters`;
  if (!/^[A-Za-z0-9._~\-/:^$[\](){}*+?|&=\\,%!@]*$/.test(v))
    return `${shown} has characters outside letters, digits and . _ ~ - / : ^ $ [ ] ( ) { } * + ? | & = \\ , % ! @`;
  if (/\(\?(?!:)/.test(v))
    return `${shown}: only the (?: group is allowed among (? constructs (a named group would set a variable)`;
  const refused = regexSubsetRefusal(v);
  return refused === null ? null : `${shown}: ${refused}`;
}

/**
 * The response headers a server-snippet may not add to every Ingress of the host: sessions, redirects, framing of the
 * body, HSTS.
 */
const HOST_WIDE_FORBIDDEN_HEADERS = [
  'set-cookie',
  'location',
  'refresh',
  'content-length',
  'content-type',
  'content-encoding',
  'transfer-encoding',
  'clear-site-data',
  'www-authenticate',
  'strict-transport-security',
  'content-security-policy',
];

/** CONTROLLER_PROXY_HEADERS are the request headers the controller sets itself (lower case); a second value would confuse the backend. */
export const CONTROLLER_PROXY_HEADERS = [
  'host',
  'upgrade',
  'connection',
  'x-request-id',
  'x-real-ip',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-port',
  'x-forwarded-proto',
  'x-forwarded-scheme',
  'x-forwarded-prefix',
  'proxy',
  'x-original-url',
  'x-original-method',
  'ssl-client-verify',
  'ssl-client-subject-dn',
  'ssl-client-issuer-dn',
  'ssl-client-cert',
];

type ArgCheck = (args: readonly string[], context: SnippetContext) => string | null;

/** AllowedDirective is one entry of the allow-list. */
export interface AllowedDirective {
  readonly name: string;
  readonly contexts: readonly SnippetContext[];
  readonly minArgs: number;
  readonly maxArgs: number;
  /** at most once per snippet (nginx refuses a duplicate) */
  readonly once?: boolean;
  /** the annotation that renders the same directive in the location; both would be a duplicate nginx refuses */
  readonly annotation?: string;
  /** for the docs: the arguments, as `name value [always]` */
  readonly usage: string;
  readonly check: ArgCheck;
  /** the optional module that provides it: allowed only when this nginx has it */
  readonly module?: Exclude<keyof NginxModules, 'crs'>;
}

const each =
  (...checks: ((v: string) => string | null)[]): ArgCheck =>
  (args) => {
    for (const [i, arg] of args.entries()) {
      const problem = (checks[Math.min(i, checks.length - 1)] ?? checkValue)(arg);
      if (problem) return problem;
    }
    return null;
  };

function checkAddHeader(args: readonly string[], context: SnippetContext): string | null {
  const [name = '', value = '', always] = args;
  const bad = header(name) ?? checkValue(value) ?? (always === undefined ? null : oneOf('always')(always));
  if (bad) return bad;
  if (context === 'server' && HOST_WIDE_FORBIDDEN_HEADERS.includes(name.toLowerCase())) {
    return `a server-snippet may not add ${name} to every Ingress on the host; set it in configuration-snippet`;
  }
  return null;
}

function checkProxySetHeader(args: readonly string[]): string | null {
  const [name = '', value = ''] = args;
  const bad = header(name) ?? checkValue(value);
  if (bad) return bad;
  return CONTROLLER_PROXY_HEADERS.includes(name.toLowerCase())
    ? `the controller sets ${name} itself (upstream-vhost sets Host)`
    : null;
}

const _REDIRECT_CODES = ['301', '302', '303', '307', '308'];
const absolute = (v: string) => /^(https?:\/\/|\$scheme)/.test(v);

function checkReturn(args: readonly string[]): string | null {
  const [first = '', second] = args;
  if (second === undefined && absolute(first)) return checkValue(first);
  if (!/^\d{3}$/.test(first) || !((Number(first) >= 200 && Number(first) <= 599) || first === '444')) {
    return `${JSON.stringify(first.slice(0, 64))} is not a status code from 200 to 599 (or 444), nor an http(s) URL`;
  }
  return second === undefined ? null : checkValue(second);
}

function checkRewrite(args: readonly string[]): string | null {
  const [regex = '', replacement = '', flag] = args;
  if (flag === undefined || !['break', 'redirect', 'permanent'].includes(flag)) {
    return (
      'rewrite needs the flag break, redirect or permanent: last (or no flag) starts a new location search, ' +
      'which can reach internal locations'
    );
  }
  return checkRegex(regex) ?? checkValue(replacement) ?? (replacement === '' ? 'rewrite needs a replacement' : null);
}

function checkExpires(args: readonly string[]): string | null {
  const [first = '', second] = args;
  const duration = (v: string) =>
    /^[-+]?\d{1,9}(ms|s|m|h|d|w|M|y)?$/.test(v)
      ? null
      : `${JSON.stringify(v.slice(0, 64))} is not off, epoch, max or a time`;
  if (second !== undefined)
    return first === 'modified'
      ? duration(second)
      : `${JSON.stringify(first.slice(0, 64))}: only 'modified' may come before the time`;
  return ['off', 'epoch', 'max'].includes(first) ? null : duration(first);
}

const access = (v: string) =>
  v === 'all' || checkCidr(v).ok ? null : `${JSON.stringify(v.slice(0, 64))} is not an IP address, a CIDR or all`;

/**
 * moreOptions splits headers-more's leading options (`-s 'codes'`, `-t 'types'`, and `-r` where `flags` has it) from
 * the header arguments, checking each option's value; returns the header arguments or the problem.
 */
function moreOptions(args: readonly string[], flags: string): { headers: readonly string[] } | { problem: string } {
  let i = 0;
  while (i < args.length && /^-[a-z]$/.test(args[i]!)) {
    const option = args[i]!;
    if (option === '-r' && flags.includes('r')) {
      i++;
      continue;
    }
    const value = args[i + 1];
    if (!flags.includes(option[1]!) || option === '-r' || value === undefined)
      return { problem: `${option} is not an option here (${flags.split('').join(', ')} with a value)` };
    const words = value.split(' ').filter(Boolean);
    const bad =
      option === '-s'
        ? words.find((w) => !/^[1-5]\d\d$/.test(w))
        : words.find((w) => !/^[a-z0-9.+-]{1,64}\/[a-z0-9.+*-]{1,64}$/i.test(w));
    if (words.length === 0 || bad !== undefined)
      return {
        problem: `${JSON.stringify(value.slice(0, 64))} is not a list of ${option === '-s' ? 'status codes' : 'MIME types'}`,
      };
    i += 2;
  }
  const headers = args.slice(i);
  return headers.length === 0 ? { problem: 'no header given' } : { headers };
}

/** hostWide refuses, in a server-snippet, a header every Ingress on the host would share (or a wildcard over one). */
function hostWide(name: string, context: SnippetContext): string | null {
  if (context !== 'server') return null;
  const lower = name.toLowerCase();
  const hit = lower.endsWith('*')
    ? HOST_WIDE_FORBIDDEN_HEADERS.find((h) => h.startsWith(lower.slice(0, -1)))
    : HOST_WIDE_FORBIDDEN_HEADERS.find((h) => h === lower);
  return hit === undefined
    ? null
    : `a server-snippet may not change ${hit} for every Ingress on the host; set it in configuration-snippet`;
}

/** headerPattern accepts a header name, or a name prefix ending in `*` (headers-more's wildcard). */
const headerPattern = (v: string) => header(v.endsWith('*') && v.length > 1 ? v.slice(0, -1) : v);

/** checkMoreSet checks more_set_headers / more_set_input_headers: `Name: value` (or `Name:` to clear) after options. */
function moreSet(input: boolean): ArgCheck {
  return (args, context) => {
    const split = moreOptions(args, input ? 'rt' : 'st');
    if ('problem' in split) return split.problem;
    for (const spec of split.headers) {
      // printable as a whole first: trimming the name must not let a newline or tab through
      const unprintable = checkValue(spec);
      if (unprintable) return unprintable;
      const colon = spec.indexOf(':');
      const name = (colon < 0 ? spec : spec.slice(0, colon)).trim();
      const value = colon < 0 ? '' : spec.slice(colon + 1).trim();
      const bad = header(name) ?? checkValue(value) ?? (input ? proxied(name) : hostWide(name, context));
      if (bad) return bad;
    }
    return null;
  };
}

/** moreClear checks more_clear_headers / more_clear_input_headers: header names or `Prefix-*`, after options. */
function moreClear(input: boolean): ArgCheck {
  return (args, context) => {
    const split = moreOptions(args, input ? 't' : 'st');
    if ('problem' in split) return split.problem;
    for (const name of split.headers) {
      const bad = headerPattern(name) ?? (input ? proxied(name) : hostWide(name, context));
      if (bad) return bad;
    }
    return null;
  };
}

/** proxied refuses a request header the controller sets for the backend (or a wildcard over one). */
function proxied(name: string): string | null {
  const lower = name.toLowerCase();
  const hit = lower.endsWith('*')
    ? CONTROLLER_PROXY_HEADERS.find((h) => h.startsWith(lower.slice(0, -1)))
    : CONTROLLER_PROXY_HEADERS.find((h) => h === lower);
  return hit === undefined ? null : `the controller sets ${hit} itself (upstream-vhost sets Host)`;
}

/**
 * HEADERS_MORE_DIRECTIVES are ingress-nginx's headers-more directives, which users' snippets often hold: response
 * headers in either context (host-wide limits as add_header), request headers only in the Ingress's own locations.
 */
const HEADERS_MORE_DIRECTIVES: readonly AllowedDirective[] = [
  {
    name: 'more_set_headers',
    contexts: ['location', 'server'],
    minArgs: 1,
    maxArgs: 16,
    usage: "[-s 'codes'] [-t 'types'] 'Name: value'…",
    check: moreSet(false),
    module: 'headersMore',
  },
  {
    name: 'more_clear_headers',
    contexts: ['location', 'server'],
    minArgs: 1,
    maxArgs: 16,
    usage: "[-s 'codes'] [-t 'types'] Name | Prefix-*…",
    check: moreClear(false),
    module: 'headersMore',
  },
  {
    name: 'more_set_input_headers',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 16,
    usage: "[-r] [-t 'types'] 'Name: value'… (not one the controller sets)",
    check: moreSet(true),
    module: 'headersMore',
  },
  {
    name: 'more_clear_input_headers',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 16,
    usage: "[-t 'types'] Name | Prefix-*… (not one the controller sets)",
    check: moreClear(true),
    module: 'headersMore',
  },
];

/** ALLOWED_DIRECTIVES is the allow-list: what snippets commonly hold and is safe, per context. */
export const ALLOWED_DIRECTIVES: readonly AllowedDirective[] = [
  {
    name: 'add_header',
    contexts: ['location', 'server'],
    minArgs: 2,
    maxArgs: 3,
    usage: 'name value [always]',
    check: checkAddHeader,
  },
  {
    name: 'proxy_set_header',
    contexts: ['location'],
    minArgs: 2,
    maxArgs: 2,
    usage: 'name value (not one the controller sets)',
    check: checkProxySetHeader,
  },
  { name: 'proxy_hide_header', contexts: ['location'], minArgs: 1, maxArgs: 1, usage: 'name', check: each(header) },
  { name: 'proxy_pass_header', contexts: ['location'], minArgs: 1, maxArgs: 1, usage: 'name', check: each(header) },
  {
    name: 'expires',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 2,
    once: true,
    usage: 'off | epoch | max | [modified] time',
    check: checkExpires,
  },
  {
    name: 'gzip',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 1,
    once: true,
    usage: 'on | off',
    check: each(oneOf('on', 'off')),
  },
  {
    name: 'client_max_body_size',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 1,
    once: true,
    annotation: 'proxy-body-size',
    usage: 'size',
    check: each(size),
  },
  {
    name: 'client_body_buffer_size',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 1,
    once: true,
    annotation: 'client-body-buffer-size',
    usage: 'size',
    check: each(size),
  },
  {
    name: 'proxy_connect_timeout',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 1,
    once: true,
    annotation: 'proxy-connect-timeout',
    usage: 'time',
    check: each(time),
  },
  {
    name: 'proxy_send_timeout',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 1,
    once: true,
    annotation: 'proxy-send-timeout',
    usage: 'time',
    check: each(time),
  },
  {
    name: 'proxy_read_timeout',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 1,
    once: true,
    annotation: 'proxy-read-timeout',
    usage: 'time',
    check: each(time),
  },
  {
    name: 'return',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 2,
    usage: 'code [text | URL] | URL (code 200-599 or 444)',
    check: checkReturn,
  },
  {
    name: 'rewrite',
    contexts: ['location'],
    minArgs: 2,
    maxArgs: 3,
    usage: 'regex replacement break | redirect | permanent',
    check: checkRewrite,
  },
  { name: 'allow', contexts: ['location'], minArgs: 1, maxArgs: 1, usage: 'address | CIDR | all', check: each(access) },
  { name: 'deny', contexts: ['location'], minArgs: 1, maxArgs: 1, usage: 'address | CIDR | all', check: each(access) },
  {
    name: 'sub_filter',
    contexts: ['location'],
    minArgs: 2,
    maxArgs: 2,
    usage: 'text replacement (text not empty)',
    check: each((v) => (v === '' ? 'the text to replace may not be empty' : checkValue(v)), checkValue),
  },
  ...HEADERS_MORE_DIRECTIVES,
  {
    name: 'sub_filter_once',
    contexts: ['location'],
    minArgs: 1,
    maxArgs: 1,
    once: true,
    usage: 'on | off',
    check: each(oneOf('on', 'off')),
  },
];

/** REFUSED_REASONS say why well-known directives are off the list, for a clearer problem than "not allowed". */
export const REFUSED_REASONS: Readonly<Record<string, string>> = {
  listen: 'it would open a socket',
  server_name: 'it would claim other hosts',
  stub_status: 'it would publish the server status',
  client_body_in_file_only: 'it would keep request bodies on disk',
  client_body_temp_path: 'it names a directory',
  add_before_body: 'its subrequest reaches other locations',
  add_after_body: 'its subrequest reaches other locations',
  satisfy: 'it changes the access checks of the whole block',
  underscores_in_headers: 'it changes header parsing for every host on the port',
  ignore_invalid_headers: 'it changes header parsing for every host on the port',
  try_files: 'it reaches other locations and files',
  error_page: 'it can reach internal locations',
  internal: 'it would hide the location',
  root: 'it reads files',
  alias: 'it reads files',
  include: 'it reads files',
  set: 'it could overwrite the variables the controller relies on',
  if: 'blocks are not allowed',
  location: 'blocks are not allowed',
  proxy_pass: 'the controller routes to the Ingress backend itself',
  auth_request: 'use the auth-url annotation',
};

/** SnippetPolicyOptions are the annotations beside the snippet that render the same directives. */
export interface SnippetPolicyOptions {
  /** is this annotation (without prefix) set on the Ingress? */
  readonly annotated?: (key: string) => boolean;
  /** the optional modules this nginx has; directives of others are refused */
  readonly modules?: NginxModules;
}

/**
 * checkSnippetDirectives reads a snippet and checks every directive against the allow-list for
 * `context`, returning the directives to render, or the first problem, naming the directive. An empty or
 * comment-only snippet is no directive at all, so nothing to refuse: ingress-nginx serves its locations too.
 */
export function checkSnippetDirectives(
  source: string,
  context: SnippetContext,
  options: SnippetPolicyOptions = {},
): Checked<SnippetDirective[]> {
  const statements = parseNginxStatements(source);
  if (!statements.ok) return statements;
  const out: SnippetDirective[] = [];
  const seen = new Set<string>();
  for (const { name, args } of statements.value) {
    const entry = ALLOWED_DIRECTIVES.find((d) => d.name === name && d.contexts.includes(context));
    const where = context === 'location' ? 'configuration-snippet' : 'server-snippet';
    if (!entry) {
      const reason = REFUSED_REASONS[name] ?? `it is not on the ${where} allow-list (docs/annotations.md)`;
      return { ok: false, message: `the directive ${name} is not allowed: ${reason}` };
    }
    if (entry.module && !options.modules?.[entry.module]) {
      return {
        ok: false,
        message:
          `the directive ${name} is not allowed: its module is not installed with this nginx ` +
          `(Debian: ${OPTIONAL_MODULES[entry.module].debian})`,
      };
    }
    if (args.length < entry.minArgs || args.length > entry.maxArgs) {
      return {
        ok: false,
        message:
          `the directive ${name} takes ${entry.usage} ` +
          `(${args.length} argument${args.length === 1 ? '' : 's'} given)`,
      };
    }
    if (entry.once && seen.has(name))
      return { ok: false, message: `the directive ${name} appears twice (nginx refuses a duplicate)` };
    if (entry.annotation && options.annotated?.(entry.annotation)) {
      return {
        ok: false,
        message:
          `the directive ${name} is also set by the annotation ${entry.annotation} (nginx refuses a ` +
          'duplicate); use one of them',
      };
    }
    const problem = entry.check(args, context);
    if (problem) return { ok: false, message: `the directive ${name}: ${problem}` };
    seen.add(name);
    out.push({ name: entry.name, args: [...args] });
  }
  return { ok: true, value: out };
}
