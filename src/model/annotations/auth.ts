import type { Secret } from '../snapshot.js';
import { checkDnsLabel, checkObjectName, show, type Checked } from '../validate.js';
import { oneOf, read } from './read.js';
import type { AnnotationGroup, AnnotationInput } from './types.js';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function secretData(secret: Secret): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of Object.entries(secret.data ?? {})) {
    if (typeof value === 'string' && BASE64.test(value)) out.set(key, Buffer.from(value, 'base64').toString('utf8'));
  }
  for (const [key, value] of Object.entries(secret.stringData ?? {}))
    if (typeof value === 'string') out.set(key, value);
  return out;
}

const USER = /^[^:\s\x00-\x1f\x7f]{1,256}$/;
const HASH = /^[\x21-\x7e]{1,1024}$/;

/** checkHtpasswd accepts htpasswd text: `user:hash` lines of printable characters (the hash is nginx's to check). */
export function checkHtpasswd(text: string): Checked<string> {
  const lines = text.split('\n').filter((line) => line !== '');
  if (lines.length === 0) return { ok: false, message: 'holds no user' };
  for (const [i, line] of lines.entries()) {
    const at = line.indexOf(':');
    if (at < 0 || !USER.test(line.slice(0, at)) || !HASH.test(line.slice(at + 1))) {
      return { ok: false, message: `line ${i + 1} is not 'user:hash' of printable characters` };
    }
  }
  return { ok: true, value: `${lines.join('\n')}\n` };
}

/** checkRealm accepts an auth realm of plain printable characters; `off` would turn auth off, `$` expand a variable. */
export function checkRealm(value: string): Checked<string> {
  if (value.length > 256 || !/^[A-Za-z0-9 .,:;_()!?@/+=*#&'-]{0,256}$/.test(value) || value === 'off') {
    return {
      ok: false,
      message:
        `${show(value)} may hold letters, digits, spaces and . , : ; _ ( ) ! ? @ / + = * # & ' - only, and ` +
        `not be 'off'`,
    };
  }
  return { ok: true, value };
}

export function secretRef(input: AnnotationInput, value: string): Checked<{ namespace: string; name: string }> {
  const [first, second, ...rest] = value.split('/');
  const namespace = second === undefined ? input.namespace : first;
  const name = second ?? first;
  if (rest.length > 0 || !checkDnsLabel(namespace).ok || !checkObjectName(name).ok) {
    return { ok: false, message: `${show(value)} is not a Secret name or namespace/name` };
  }
  if (namespace !== input.namespace && !input.config.allowCrossNamespaceResources) {
    return {
      ok: false,
      message: `Secret ${namespace}/${name} is in another namespace and allow-cross-namespace-resources is false`,
    };
  }
  return { ok: true, value: { namespace: namespace!, name: name! } };
}

/** authGroup is basic auth: auth-type basic, auth-secret (htpasswd, or a user map) and auth-realm. */
export const authGroup: AnnotationGroup<'auth'> = {
  name: 'BasicDigestAuth',
  field: 'auth',
  keys: [
    {
      key: 'auth-type',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'deny',
      support: 'partial',
      doc: '`basic`: HTTP basic auth against auth-secret (401 without valid credentials)',
      note: '`digest` is refused (the Ingress fails closed: its locations answer 503)',
    },
    {
      key: 'auth-secret',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'deny',
      support: 'supported',
      doc: 'Secret `name` or `namespace/name` with the htpasswd; written 0600 beside nginx.conf, never logged',
    },
    {
      key: 'auth-secret-type',
      risk: 'Low',
      scope: 'location',
      onInvalid: 'deny',
      support: 'supported',
      doc: '`auth-file` (htpasswd in the key `auth`, default) or `auth-map` (user keys, hash values)',
    },
    {
      key: 'auth-realm',
      risk: 'Medium',
      scope: 'location',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'the realm shown by the browser',
    },
  ],
  parse(input) {
    const type = read(input, 'auth-type', (v) =>
      v === 'digest' ? { ok: false, message: 'digest authentication is not supported' } : oneOf(['basic'] as const)(v),
    );
    const realm = read(input, 'auth-realm', checkRealm) ?? '';
    const secretType = read(input, 'auth-secret-type', oneOf(['auth-file', 'auth-map'] as const)) ?? 'auth-file';
    const rawSecret = input.get('auth-secret');
    if (type === undefined) {
      if (rawSecret !== undefined && input.get('auth-type') === undefined)
        input.note('auth-secret', 'has no effect without auth-type: basic');
      return null;
    }
    if (rawSecret === undefined) {
      input.invalid('auth-type', 'basic auth needs auth-secret');
      return null;
    }
    const ref = secretRef(input, rawSecret);
    if (!ref.ok) {
      input.invalid('auth-secret', ref.message);
      return null;
    }
    const secretId = `${ref.value.namespace}/${ref.value.name}`;
    const secret = input.secret(ref.value.namespace, ref.value.name);
    if (!secret) {
      input.invalid('auth-secret', `Secret ${secretId} not found`);
      return null;
    }
    const data = secretData(secret);
    const text =
      secretType === 'auth-file' ? data.get('auth') : [...data].map(([user, hash]) => `${user}:${hash}`).join('\n');
    if (text === undefined) {
      input.invalid('auth-secret', `Secret ${secretId} has no key 'auth'`);
      return null;
    }
    const htpasswd = checkHtpasswd(text);
    if (!htpasswd.ok) {
      input.invalid('auth-secret', `Secret ${secretId}: ${htpasswd.message}`);
      return null;
    }
    return { realm, secretId, content: htpasswd.value };
  },
};
