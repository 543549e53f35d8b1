/**
 * backend-protocol HTTPS with proxy-ssl-* in Gateway API terms: a BackendTLSPolicy on each backend Service port (its
 * CA in a ConfigMap beside it, copied from the `ca.crt` of proxy-ssl-secret; its hostname proxy-ssl-name). Only what
 * a policy says the same is converted: ingress-nginx checks the backend only with proxy-ssl-verify on, and a policy
 * always checks, so HTTPS without verification stays unexpressed (reported). Values pass the model's validators.
 */
import { checkCaBundle } from '../model/annotations/auth-tls.js';
import { secretData } from '../model/annotations/auth.js';
import { ANNOTATION_PREFIX } from '../model/annotations/types.js';
import { compare } from '../model/backends.js';
import { GATEWAY_GROUP } from '../model/gateway/types.js';
import type { KubeObject, Secret, Service } from '../model/snapshot.js';
import { checkDnsLabel, checkHost, checkObjectName, show } from '../model/validate.js';
import { POLICY_SCOPE } from './annotations.js';
import { objectName } from './object-name.js';

/** Report records one thing convert could not express about an Ingress: the field and why. */
type Report = (field: string, reason: string) => void;
/** IngressReport is draft.ts's Report (not imported: draft.ts's Settings come from here through read-settings.ts). */
type IngressReport = (owner: string, field: string, reason: string) => void;
/** Backend is a backendRef's Service and port (draft.ts's Backend, read only). */
type Backend = { readonly name: string; readonly port: number };

/** BackendTlsAsk is what one Ingress's annotations ask of TLS to its backends, in policy terms. */
export interface BackendTlsAsk {
  /** proxy-ssl-name: the name checked in the backend's certificate, sent as SNI */
  readonly hostname: string;
  /** the PEM bundle of the Secret's ca.crt */
  readonly caPem: string;
  /** the ConfigMap the CA is copied to, in the Ingress's namespace */
  readonly configMap: string;
}

/** the keys read here (read-settings.ts reports none of them itself) */
export const BACKEND_TLS_KEYS = [
  'backend-protocol',
  'proxy-ssl-secret',
  'proxy-ssl-verify',
  'proxy-ssl-name',
  'proxy-ssl-server-name',
] as const;

const full = (key: string) => `metadata.annotations.${ANNOTATION_PREFIX}${key}`;

/**
 * readBackendTls reads backend-protocol and the proxy-ssl-* keys of one Ingress: what a BackendTLSPolicy can say, or
 * null, reporting every key it does not convert.
 */
export function readBackendTls(
  values: ReadonlyMap<string, string>,
  namespace: string,
  secretOf: (namespace: string, name: string) => Secret | undefined,
  report: Report,
): BackendTlsAsk | null {
  const protocol = values.get('backend-protocol')?.toUpperCase() ?? 'HTTP';
  const sslKeys = BACKEND_TLS_KEYS.filter((k) => k !== 'backend-protocol' && values.has(k));
  const leftOut = (keys: readonly string[], reason: string) => {
    for (const k of keys) report(full(k), `${reason}; left out`);
  };
  if (protocol !== 'HTTPS') {
    if (protocol !== 'HTTP')
      report(
        full('backend-protocol'),
        `${show(values.get('backend-protocol'))}: gRPC backends are a GRPCRoute and the others have no Gateway API ` +
          'form, neither made by convert; left out',
      );
    leftOut(sslKeys, 'has no effect without backend-protocol HTTPS (or GRPCS, not converted)');
    return null;
  }
  const verify = values.get('proxy-ssl-verify')?.toLowerCase() === 'on';
  if (!verify) {
    report(
      full('backend-protocol'),
      'HTTPS without checking the backend certificate (proxy-ssl-verify is not on) has no Gateway API form: a ' +
        'BackendTLSPolicy always checks it; left out (the route speaks HTTP to the backend)',
    );
    leftOut(
      sslKeys.filter((k) => k !== 'proxy-ssl-verify'),
      'belongs to a BackendTLSPolicy, which needs proxy-ssl-verify on',
    );
    return null;
  }
  const refused = (key: string, message: string) => {
    report(full(key), `${message}; no BackendTLSPolicy (the route speaks HTTP to the backend)`);
    return null;
  };
  const secretText = values.get('proxy-ssl-secret');
  if (secretText === undefined) return refused('proxy-ssl-verify', 'on needs proxy-ssl-secret (its ca.crt)');
  // `name` or `namespace/name`, as the model's secretRef reads it
  const [first, second, ...rest] = secretText.split('/');
  const secretNs = checkDnsLabel(second === undefined ? namespace : first);
  const secretName = checkObjectName(second ?? first);
  if (rest.length > 0 || !secretNs.ok || !secretName.ok)
    return refused('proxy-ssl-secret', `${show(secretText)} is not a Secret name or namespace/name`);
  const secretId = `${secretNs.value}/${secretName.value}`;
  const secret = secretOf(secretNs.value, secretName.value);
  if (!secret) return refused('proxy-ssl-secret', `Secret ${secretId} is not in the manifests`);
  const data = secretData(secret);
  const ca = data.get('ca.crt');
  const bundle = ca === undefined ? ({ ok: false, message: "has no key 'ca.crt'" } as const) : checkCaBundle(ca);
  if (!bundle.ok) return refused('proxy-ssl-secret', `Secret ${secretId} ${bundle.message}`);
  const nameText = values.get('proxy-ssl-name');
  if (nameText === undefined)
    return refused(
      'proxy-ssl-verify',
      'a BackendTLSPolicy needs the name to check in the certificate: set proxy-ssl-name (without it ingress-nginx ' +
        "checks the upstream's internal name)",
    );
  const hostname = checkHost(nameText);
  if (!hostname.ok || hostname.value.startsWith('*.'))
    return refused('proxy-ssl-name', hostname.ok ? `${show(nameText)} is a wildcard, not a host` : hostname.message);
  if (data.has('tls.crt'))
    report(
      full('proxy-ssl-secret'),
      `Secret ${secretId}'s client certificate (tls.crt) is a Gateway's spec.tls.backend.clientCertificateRef in ` +
        'Gateway API, shown to all its backends; not converted',
    );
  if (values.get('proxy-ssl-server-name')?.toLowerCase() !== 'on')
    report(
      full('proxy-ssl-server-name'),
      'a BackendTLSPolicy always sends its hostname as SNI (ingress-nginx sends none unless proxy-ssl-server-name is on)',
    );
  // the CA's ConfigMap lives beside the policy (a policy reads ConfigMaps of its own namespace only)
  const configMap = objectName(
    secretNs.value === namespace ? secretName.value : `${secretNs.value}-${secretName.value}`,
    'ca',
  );
  return { hostname: hostname.value, caPem: bundle.value, configMap };
}

/** PolicyDemand is one Ingress's ask for one backend Service port. */
export interface PolicyDemand {
  readonly owner: string;
  readonly namespace: string;
  readonly backend: Backend;
  readonly ask: BackendTlsAsk;
}

/** BackendUse is one Ingress's route to a backend Service port. */
export type BackendUse = Omit<PolicyDemand, 'ask'>;

/**
 * backendTlsPolicies makes one BackendTLSPolicy per Service port the demands name (the oldest Ingress's ask, which
 * the demands come in order of) and the ConfigMaps of their CAs; a later ask that differs is reported.
 */
export function backendTlsPolicies(
  demands: readonly PolicyDemand[],
  uses: readonly BackendUse[],
  serviceOf: (namespace: string, name: string) => Service | undefined,
  report: IngressReport,
): KubeObject[] {
  const converted = new Set<string>();
  const convertedOnce = (owner: string) => {
    if (converted.has(owner)) return;
    converted.add(owner);
    report(owner, full('backend-protocol'), `converted to a BackendTLSPolicy: ${POLICY_SCOPE}`);
  };
  const policies = new Map<string, { demand: PolicyDemand; object: KubeObject }>();
  const configMaps = new Map<string, KubeObject>();
  for (const d of demands) {
    const key = `${d.namespace}/${d.backend.name}:${d.backend.port}`;
    const first = policies.get(key);
    if (first) {
      const same = first.demand.ask.hostname === d.ask.hostname && first.demand.ask.caPem === d.ask.caPem;
      if (!same)
        report(
          d.owner,
          full('proxy-ssl-name'),
          `Service ${d.namespace}/${d.backend.name} port ${d.backend.port} has a BackendTLSPolicy from Ingress ` +
            `${first.demand.owner} (older) with another CA or name; this Ingress's is left out`,
        );
      else convertedOnce(d.owner);
      continue;
    }
    // A policy names a port by its name; an unnamed port is the Service's only one, so the whole Service is meant.
    const ports = serviceOf(d.namespace, d.backend.name)?.spec?.ports;
    const port = ports?.find((p) => p.port === d.backend.port);
    const sectionName = port?.name ? { sectionName: port.name } : {};
    if (!port?.name && ports?.length !== 1)
      report(
        d.owner,
        full('backend-protocol'),
        `Service ${d.namespace}/${d.backend.name} port ${d.backend.port} has no name${ports ? '' : ' (the Service is not in the manifests)'}: ` +
          'the BackendTLSPolicy targets the whole Service, all its ports',
      );
    const cmKey = `${d.namespace}/${d.ask.configMap}`;
    const cm = configMaps.get(cmKey) as { data?: Record<string, string> } | undefined;
    if (cm && cm.data?.['ca.crt'] !== d.ask.caPem) {
      report(
        d.owner,
        full('proxy-ssl-secret'),
        `ConfigMap ${cmKey} would hold two different CAs; this Ingress's BackendTLSPolicy is left out`,
      );
      continue;
    }
    convertedOnce(d.owner);
    policies.set(key, {
      demand: d,
      object: {
        apiVersion: `${GATEWAY_GROUP}/v1`,
        kind: 'BackendTLSPolicy',
        metadata: { name: objectName(d.backend.name, `${d.backend.port}-tls`), namespace: d.namespace },
        spec: {
          targetRefs: [{ group: '', kind: 'Service', name: d.backend.name, ...sectionName }],
          validation: {
            caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: d.ask.configMap }],
            hostname: d.ask.hostname,
          },
        },
      } as KubeObject,
    });
    configMaps.set(`${d.namespace}/${d.ask.configMap}`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: d.ask.configMap, namespace: d.namespace },
      data: { 'ca.crt': d.ask.caPem },
    } as KubeObject);
  }
  // Where another Ingress routes to a port with a policy, it gets TLS too: ingress-nginx spoke HTTP (or unchecked
  // HTTPS) there.
  const askers = new Set(demands.map((d) => d.owner));
  const told = new Set<string>();
  for (const u of uses) {
    const policy = policies.get(`${u.namespace}/${u.backend.name}:${u.backend.port}`);
    const key = `${u.owner} ${u.backend.name}:${u.backend.port}`;
    if (!policy || askers.has(u.owner) || told.has(key)) continue;
    told.add(key);
    report(
      u.owner,
      `backend ${u.backend.name}:${u.backend.port}`,
      `Service port has a BackendTLSPolicy (from Ingress ${policy.demand.owner}): this Ingress's routes to it speak ` +
        'TLS and check its certificate too',
    );
  }
  const byKey = (a: [string, unknown], b: [string, unknown]) => compare(a[0], b[0]);
  return [...[...configMaps].sort(byKey).map(([, o]) => o), ...[...policies].sort(byKey).map(([, p]) => p.object)];
}
