/**
 * auth-tls-* in Gateway API terms: a Gateway validates client certificates per port (`spec.tls.frontend`), where
 * ingress-nginx did per host. So the HTTPS hosts of a converted Gateway convert only when every one of them asks the
 * same (the owner of each host, the oldest Ingress naming it, decides, as the controller settles it): then
 * `frontend.default.validation` names a ConfigMap with the CA (copied from the Secret's `ca.crt`). Otherwise the
 * asks are reported and left out. `on` is AllowValidOnly; `optional_no_ca` is AllowInsecureFallback (both let every
 * client in); `optional` becomes AllowInsecureFallback too, reported: ingress-nginx refuses an invalid certificate.
 */
import { checkCaBundle } from '../model/annotations/auth-tls.js';
import { secretData } from '../model/annotations/auth.js';
import { ANNOTATION_PREFIX } from '../model/annotations/types.js';
import type { Ingress, KubeObject, Secret } from '../model/snapshot.js';
import { checkDnsLabel, checkHost, checkObjectName, show } from '../model/validate.js';
import { objectName } from './object-name.js';

/** ClientCaAsk is what one Ingress's auth-tls annotations ask of its hosts' TLS handshakes. */
export interface ClientCaAsk {
  readonly caPem: string;
  readonly mode: 'AllowValidOnly' | 'AllowInsecureFallback';
  /** the Secret it came from, `namespace/name` */
  readonly secret: string;
}

/** the keys read here (read-settings.ts reports none of them itself) */
export const CLIENT_CA_KEYS = ['auth-tls-secret', 'auth-tls-verify-client'] as const;

const full = (key: string) => `metadata.annotations.${ANNOTATION_PREFIX}${key}`;

/** readClientCa reads auth-tls-secret and auth-tls-verify-client of one Ingress, reporting what it cannot say. */
export function readClientCa(
  values: ReadonlyMap<string, string>,
  namespace: string,
  secretOf: (namespace: string, name: string) => Secret | undefined,
  report: (field: string, reason: string) => void,
): ClientCaAsk | null {
  const secretText = values.get('auth-tls-secret');
  const verify = (values.get('auth-tls-verify-client') ?? 'on').toLowerCase();
  if (secretText === undefined) {
    if (values.has('auth-tls-verify-client'))
      report(full('auth-tls-verify-client'), 'has no effect without auth-tls-secret; left out');
    return null;
  }
  const refused = (key: string, message: string) => {
    report(full(key), `${message}; left out`);
    return null;
  };
  if (verify === 'off') return refused('auth-tls-secret', 'auth-tls-verify-client is off: nothing is validated');
  if (verify !== 'on' && verify !== 'optional' && verify !== 'optional_no_ca')
    return refused('auth-tls-verify-client', `${show(verify)} is not on, off, optional or optional_no_ca`);
  const [first, second, ...rest] = secretText.split('/');
  const secretNs = checkDnsLabel(second === undefined ? namespace : first);
  const secretName = checkObjectName(second ?? first);
  if (rest.length > 0 || !secretNs.ok || !secretName.ok)
    return refused('auth-tls-secret', `${show(secretText)} is not a Secret name or namespace/name`);
  const secretId = `${secretNs.value}/${secretName.value}`;
  const secret = secretOf(secretNs.value, secretName.value);
  if (!secret) return refused('auth-tls-secret', `Secret ${secretId} is not in the manifests`);
  const ca = secretData(secret).get('ca.crt');
  const bundle = ca === undefined ? ({ ok: false, message: "has no key 'ca.crt'" } as const) : checkCaBundle(ca);
  if (!bundle.ok) return refused('auth-tls-secret', `Secret ${secretId} ${bundle.message}`);
  if (verify === 'optional')
    report(
      full('auth-tls-verify-client'),
      'optional becomes AllowInsecureFallback, which lets in a client with an invalid certificate too (ingress-nginx ' +
        'answers it 400)',
    );
  return { caPem: bundle.value, mode: verify === 'on' ? 'AllowValidOnly' : 'AllowInsecureFallback', secret: secretId };
}

/** HostAsk is one HTTPS host of a Gateway: the Ingress that owns it and what it asks (null: nothing). */
export interface HostAsk {
  readonly host: string;
  readonly owner: string;
  readonly ask: ClientCaAsk | null;
}

/** FrontendValidation is a Gateway's `spec.tls.frontend` and the ConfigMap of its CA. */
export interface FrontendValidation {
  readonly frontend: Record<string, unknown>;
  readonly configMap: KubeObject;
}

/**
 * frontendValidation is a Gateway's client-certificate validation when all its HTTPS hosts ask the same; null
 * (reporting each ask) when they differ or none asks.
 */
export function frontendValidation(
  gateway: { readonly name: string; readonly namespace: string },
  hosts: readonly HostAsk[],
  report: (owner: string, field: string, reason: string) => void,
): FrontendValidation | null {
  const asking = hosts.filter((h) => h.ask !== null);
  if (asking.length === 0) return null;
  const first = asking[0]!.ask!;
  const same = hosts.every((h) => h.ask !== null && h.ask.caPem === first.caPem && h.ask.mode === first.mode);
  const owners = [...new Set(asking.map((h) => h.owner))];
  if (!same) {
    const other = hosts.find((h) => h.ask === null || h.ask.caPem !== first.caPem || h.ask.mode !== first.mode)!;
    for (const owner of owners)
      report(
        owner,
        full('auth-tls-secret'),
        `Gateway API validates client certificates per port (spec.tls.frontend), and port 443 of Gateway ` +
          `${gateway.namespace}/${gateway.name} also serves ${show(other.host)}, which asks ${other.ask ? 'another CA or mode' : 'none'}; left out`,
      );
    return null;
  }
  for (const owner of owners)
    report(
      owner,
      full('auth-tls-secret'),
      `converted to the Gateway's spec.tls.frontend.default (${first.mode}): it is port 443's, every HTTPS host of ` +
        `Gateway ${gateway.namespace}/${gateway.name}; plain HTTP is not validated (ingress-nginx answers it 403)`,
    );
  const name = objectName(gateway.name, 'client-ca');
  return {
    frontend: {
      default: { validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name }], mode: first.mode } },
    },
    configMap: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: gateway.namespace },
      data: { 'ca.crt': first.caPem },
    } as KubeObject,
  };
}

/** hostOwners maps each host to the first Ingress (oldest first) whose rules name the host. */
export function hostOwners<T extends { readonly ingress: Ingress }>(members: readonly T[]): Map<string, T> {
  const owners = new Map<string, T>();
  for (const m of members)
    for (const rule of m.ingress.spec?.rules ?? []) {
      const host = rule.host ? checkHost(rule.host) : null;
      if (host?.ok && !owners.has(host.value)) owners.set(host.value, m);
    }
  return owners;
}
