import { checkCiphers } from '../config-map/ciphers.js';
import { checkHost, checkSslProtocols } from '../validate.js';
import { checkTlsPair } from '../certificate.js';
import { checkCaBundle } from './auth-tls.js';
import { secretData, secretRef } from './auth.js';
import { intIn, noteWithout, oneOf, read } from './read.js';
import type { AnnotationGroup, ProxySslAnnotations } from './types.js';

const NEEDS_SECRET = ['proxy-ssl-verify', 'proxy-ssl-verify-depth', 'proxy-ssl-ciphers', 'proxy-ssl-protocols'];

/**
 * proxySslGroup is TLS to the backend checked as ingress-nginx's proxy-ssl-* annotations ask: the CA of
 * proxy-ssl-secret (`ca.crt`) verifies the backend's certificate when proxy-ssl-verify is on, its `tls.crt` and
 * `tls.key` (when present) are the client certificate nginx shows, and proxy-ssl-name / proxy-ssl-server-name
 * name the backend (the name checked and sent as SNI). With backend-protocol HTTPS or GRPCS.
 */
export const proxySslGroup: AnnotationGroup<'proxySsl'> = {
  name: 'ProxySSL',
  field: 'proxySsl',
  keys: [
    {
      key: 'proxy-ssl-secret',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'deny',
      support: 'supported',
      doc:
        'Secret `name` or `namespace/name`: its `ca.crt` verifies the backend (proxy_ssl_trusted_certificate), its ' +
        '`tls.crt`/`tls.key`, when present, are the client certificate shown to it; written 0600',
    },
    {
      key: 'proxy-ssl-verify',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'deny',
      support: 'supported',
      doc: 'proxy_ssl_verify: on or off (default); on uses its own upstream without keepalive (see docs/design/gateway-api.md)',
    },
    {
      key: 'proxy-ssl-verify-depth',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_ssl_verify_depth (default 1)',
    },
    {
      key: 'proxy-ssl-name',
      risk: 'High',
      scope: 'ingress',
      onInvalid: 'deny',
      support: 'partial',
      doc: 'proxy_ssl_name: the name checked in the backend certificate (and sent with proxy-ssl-server-name)',
      note: 'a host name only: nginx variables ($host…) are refused',
    },
    {
      key: 'proxy-ssl-server-name',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_ssl_server_name: on or off (default): send SNI to the backend',
    },
    {
      key: 'proxy-ssl-protocols',
      risk: 'Low',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_ssl_protocols: a space-separated list (default TLSv1.2 TLSv1.3)',
    },
    {
      key: 'proxy-ssl-ciphers',
      risk: 'Medium',
      scope: 'ingress',
      onInvalid: 'ignore',
      support: 'supported',
      doc: 'proxy_ssl_ciphers: an OpenSSL cipher list (default DEFAULT)',
    },
  ],
  parse(input): ProxySslAnnotations | null {
    const ref = read(input, 'proxy-ssl-secret', (v) => secretRef(input, v));
    const verify = read(input, 'proxy-ssl-verify', oneOf(['on', 'off'] as const, true));
    const depth = read(input, 'proxy-ssl-verify-depth', intIn(1, 100)) ?? 1;
    const name = read(input, 'proxy-ssl-name', (v) =>
      v.startsWith('*.') ? { ok: false, message: `${JSON.stringify(v)} is a wildcard, not a host` } : checkHost(v),
    );
    const serverName = read(input, 'proxy-ssl-server-name', oneOf(['on', 'off'] as const, true));
    const protocols = read(input, 'proxy-ssl-protocols', checkSslProtocols) ?? ['TLSv1.2', 'TLSv1.3'];
    const ciphers = read(input, 'proxy-ssl-ciphers', checkCiphers) ?? 'DEFAULT';
    if (ref === undefined) {
      // ingress-nginx verifies only with the Secret's CA: verification without one would trust nothing or anything
      if (verify === 'on') input.invalid('proxy-ssl-verify', 'on needs proxy-ssl-secret (its ca.crt)');
      noteWithout(
        input,
        NEEDS_SECRET.filter((k) => k !== 'proxy-ssl-verify' || verify !== 'on'),
        'proxy-ssl-secret',
      );
      if (name === undefined && serverName === undefined) return null;
      return {
        secretId: null,
        caPem: null,
        clientPem: null,
        verify: false,
        depth,
        name: name ?? null,
        serverName: serverName === 'on',
        protocols,
        ciphers,
      };
    }
    const secretId = `${ref.namespace}/${ref.name}`;
    const secret = input.secret(ref.namespace, ref.name);
    if (!secret) {
      input.invalid('proxy-ssl-secret', `Secret ${secretId} not found`);
      return null;
    }
    const data = secretData(secret);
    const ca = data.get('ca.crt');
    const checked = ca === undefined ? ({ ok: false, message: "has no key 'ca.crt'" } as const) : checkCaBundle(ca);
    if (!checked.ok) {
      input.invalid('proxy-ssl-secret', `Secret ${secretId} ${checked.message}`);
      return null;
    }
    const [cert, key] = [data.get('tls.crt'), data.get('tls.key')];
    let clientPem: string | null = null;
    if (cert !== undefined && key !== undefined) {
      const pair = checkTlsPair(cert, key, false);
      if (!pair.ok) {
        input.invalid('proxy-ssl-secret', `Secret ${secretId}: ${pair.message}`);
        return null;
      }
      clientPem = pair.value.pem;
    }
    return {
      secretId,
      caPem: checked.value,
      clientPem,
      verify: verify === 'on',
      depth,
      name: name ?? null,
      serverName: serverName === 'on',
      protocols,
      ciphers,
    };
  },
};
