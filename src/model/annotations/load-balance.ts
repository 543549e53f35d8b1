import { show, type Checked } from '../validate.js';
import { intIn, read, readBool } from './read.js';
import type { AnnotationGroup } from './types.js';

const VARIABLES = new Set([
  'request_uri',
  'uri',
  'document_uri',
  'host',
  'hostname',
  'remote_addr',
  'binary_remote_addr',
  'remote_port',
  'args',
  'query_string',
  'is_args',
  'request_method',
  'scheme',
  'https',
  'server_name',
  'server_port',
  'server_addr',
  'request',
  'request_id',
]);

/** The longest upstream-hash-by key accepted (checked before anything else reads the value). */
const MAX_HASH_KEY = 256;

const isPlain = (c: string) => /^[A-Za-z0-9_.:/-]$/.test(c);
const isNameStart = (c: string | undefined) => c !== undefined && /^[A-Za-z_]$/.test(c);
const isNameChar = (c: string | undefined) => c !== undefined && /^[A-Za-z0-9_]$/.test(c);

/**
 * checkHashKey accepts an upstream-hash-by key: text of plain characters and nginx variables,
 * each one a variable nginx knows when it picks an endpoint (a misspelt one would fail `nginx -t`).
 * It reads the value once, left to right (a one-character test per step), so it runs in linear time.
 */
export function checkHashKey(value: string): Checked<string> {
  const bad = { ok: false as const, message: `${show(value)} may hold letters, digits, . _ : / - and $variables only` };
  if (value.length === 0 || value.length > MAX_HASH_KEY)
    return { ok: false, message: `must be 1 to ${MAX_HASH_KEY} characters` };
  let i = 0;
  while (i < value.length) {
    const c = value[i]!;
    if (isPlain(c)) {
      i++;
      continue;
    }
    if (c !== '$') return bad;
    const braced = value[i + 1] === '{';
    let j = braced ? i + 2 : i + 1;
    if (!isNameStart(value[j])) return bad;
    const start = j;
    while (isNameChar(value[j])) j++;
    const name = value.slice(start, j).toLowerCase();
    if (braced) {
      if (value[j] !== '}') return bad;
      j++;
    }
    if (!VARIABLES.has(name) && !/^(http|cookie|arg)_[a-z0-9_]+$/.test(name)) {
      return { ok: false, message: `$${name} is not a variable nginx knows when it picks an endpoint` };
    }
    i = j;
  }
  return { ok: true, value };
}

/** loadBalanceGroup is load-balance, upstream-hash-by and service-upstream: how an endpoint is chosen. */
export const loadBalanceGroup: AnnotationGroup<'balance'> = {
  name: 'LoadBalancing',
  field: 'balance',
  keys: [
    {
      key: 'load-balance',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'partial',
      doc:
        '`round_robin`, or `ewma`: EWMA in the Lua balancer, least_conn without it (--dynamic-backends=false, or ' +
        'nginx without Lua)',
    },
    {
      key: 'upstream-hash-by',
      risk: 'High',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: '`hash <key> consistent` on text and nginx variables; wins over load-balance',
    },
    {
      key: 'upstream-hash-by-subset',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'partial',
      doc: 'accepted; the hash picks one endpoint, not a subset',
    },
    {
      key: 'upstream-hash-by-subset-size',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'partial',
      doc: 'accepted and validated; no effect (see upstream-hash-by-subset)',
    },
    {
      key: 'service-upstream',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: "proxy to the Service's ClusterIP and port instead of its endpoints",
    },
  ],
  parse(input) {
    const policy = read(input, 'load-balance', (v) =>
      v === 'round_robin' || v === 'ewma'
        ? { ok: true, value: v }
        : { ok: false, message: `${show(v)} is not round_robin or ewma` },
    );
    if (readBool(input, 'upstream-hash-by-subset'))
      input.note('upstream-hash-by-subset', 'subsets are not supported; the hash picks one endpoint');
    read(input, 'upstream-hash-by-subset-size', intIn(1, 1000));
    return {
      leastConn: policy === undefined ? null : policy === 'ewma',
      hashBy: read(input, 'upstream-hash-by', checkHashKey) ?? null,
      serviceUpstream: readBool(input, 'service-upstream') ?? false,
    };
  },
};
