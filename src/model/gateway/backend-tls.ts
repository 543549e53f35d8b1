/**
 * BackendTLSPolicy (gateway.networking.k8s.io/v1): TLS from nginx to a Service port, verified with the CA bundle of
 * the policy's ConfigMaps and the policy's hostname (SNI and the name checked), and each policy's status per
 * ancestor Gateway. Pure: the policies, ConfigMaps and Services are read as untrusted data; every value that reaches
 * nginx (the hostname, the CA bundle) passes its validator here.
 *
 * nginx 1.22 verifies one name, the one it also sends as SNI (proxy_ssl_name): `subjectAltNames` other than the
 * hostname itself cannot be checked, so a policy naming any is refused (Accepted=False/Invalid) rather than served
 * with a weaker check than it asks for. `wellKnownCACertificates: System` uses the controller's system bundle.
 */
import { createHash } from 'node:crypto';
import { checkCaBundle } from '../annotations/auth-tls.js';
import type { Problem } from '../nginx-model.js';
import type { ConfigMap, KubeObject, Service } from '../snapshot.js';
import { checkHost, checkObjectName } from '../validate.js';
import { cond } from './listeners.js';
import { byAge } from './precedence.js';
import { readMeta } from './read.js';
import { Collector, list, rec, text } from './read-fields.js';
import type { GatewayRoutes, PolicyStatus } from './routes.js';
import type { Condition, Meta, ObjectRef } from './types.js';

/** SYSTEM_CA is the CA file nginx trusts for `wellKnownCACertificates: System` (Debian's ca-certificates). */
export const SYSTEM_CA = '/etc/ssl/certs/ca-certificates.crt';

/** BackendTLSPolicy is a policy as read: its targets and what it verifies. */
export interface BackendTLSPolicy {
  readonly meta: Meta;
  readonly targets: readonly { readonly name: string; readonly sectionName: string | undefined }[];
  readonly caRefs: readonly { readonly group: string; readonly kind: string; readonly name: string }[];
  readonly system: boolean;
  readonly hostname: string | undefined;
  readonly invalid: readonly { readonly field: string; readonly message: string }[];
}

/** BackendTls is how nginx talks to one Service port: TLS verified by `ca` (a PEM bundle, or the system one). */
export interface BackendTls {
  /** the name sent as SNI and checked in the certificate */
  readonly hostname: string;
  /** the CA bundle's PEM; null: the system bundle (SYSTEM_CA) */
  readonly caPem: string | null;
  /** the CA's key: the profile `@ia_btls_<key>` of nginx.conf, 16 hex digits */
  readonly key: string;
  /** `namespace/name` of the policy */
  readonly policy: string;
}

/**
 * BackendTlsBackend is a policy refused for its CA (no valid one): traffic to the Service port is refused (500)
 * rather than sent in the clear.
 */
export type BackendTlsVerdict = BackendTls | { readonly refused: string };

/** readBackendTLSPolicy reads a policy; null without a name. */
export function readBackendTLSPolicy(object: unknown): BackendTLSPolicy | null {
  const meta = readMeta(object, true);
  if (!meta) return null;
  const spec = rec(rec(object).spec);
  const c = new Collector();
  const targets: { name: string; sectionName: string | undefined }[] = [];
  for (const [i, raw] of list(spec.targetRefs).entries()) {
    const t = rec(raw);
    const field = `spec.targetRefs[${i}]`;
    if ((text(t.group) ?? '') !== '' || text(t.kind) !== 'Service') {
      c.refuse(`${field}.kind`, 'only core Services can be targeted');
      continue;
    }
    const name = c.check(`${field}.name`, checkObjectName(t.name));
    const sectionName = c.optional(`${field}.sectionName`, t.sectionName, checkObjectName);
    if (name !== undefined) targets.push({ name, sectionName });
  }
  const validation = rec(spec.validation);
  const caRefs = list(validation.caCertificateRefs).map((raw) => {
    const r = rec(raw);
    return { group: text(r.group) ?? '', kind: text(r.kind) ?? '', name: text(r.name) ?? '' };
  });
  const wellKnown = validation.wellKnownCACertificates;
  const system = wellKnown === 'System';
  if (wellKnown !== undefined && wellKnown !== null && !system)
    c.refuse('spec.validation.wellKnownCACertificates', 'only System is known');
  if (system && caRefs.length > 0)
    c.refuse('spec.validation', 'caCertificateRefs and wellKnownCACertificates exclude each other');
  const hostname = c.check('spec.validation.hostname', checkHost(validation.hostname));
  if (hostname?.startsWith('*.')) c.refuse('spec.validation.hostname', 'must not be a wildcard');
  for (const [i, raw] of list(validation.subjectAltNames).entries()) {
    const san = rec(raw);
    if (san.type === 'Hostname' && san.hostname === hostname) continue;
    c.refuse(
      `spec.validation.subjectAltNames[${i}]`,
      'nginx verifies the backend certificate against the hostname only (the name it sends as SNI): other subjectAltNames cannot be checked',
    );
  }
  return { meta, targets, caRefs, system, hostname, invalid: c.invalid };
}

/** BackendTlsInput is what judging the policies needs. */
export interface BackendTlsInput {
  readonly policies: readonly KubeObject[];
  readonly configMaps: readonly ConfigMap[];
  readonly services: readonly Service[];
  readonly routes: GatewayRoutes;
}

/** BackendTlsResult is the verdict per upstream name (`namespace_service_port`) and each policy's status. */
export interface BackendTlsResult {
  readonly byUpstream: ReadonlyMap<string, BackendTlsVerdict>;
  readonly status: readonly PolicyStatus[];
  readonly problems: readonly Problem[];
}

const upstreamOf = (namespace: string, service: string, port: number) => `${namespace}_${service}_${port}`;

type CaVerdict =
  | { readonly ok: true; readonly pem: string | null }
  | { readonly ok: false; readonly reason: 'InvalidKind' | 'InvalidCACertificateRef'; readonly message: string };

/** caOf reads the policy's CA bundle from its ConfigMaps (key `ca.crt`), or the system's. */
function caOf(policy: BackendTLSPolicy, configMaps: readonly ConfigMap[]): CaVerdict {
  if (policy.system) return { ok: true, pem: null };
  if (policy.caRefs.length === 0)
    return { ok: false, reason: 'InvalidCACertificateRef', message: 'no caCertificateRefs' };
  const pems: string[] = [];
  for (const ref of policy.caRefs) {
    if (ref.group !== '' || ref.kind !== 'ConfigMap')
      return { ok: false, reason: 'InvalidKind', message: `${ref.group}/${ref.kind} is not a ConfigMap` };
    const found = configMaps.find(
      (m) => m.metadata?.namespace === policy.meta.namespace && m.metadata?.name === ref.name,
    );
    const data = found?.data?.['ca.crt'];
    if (data === undefined)
      return { ok: false, reason: 'InvalidCACertificateRef', message: `ConfigMap ${ref.name} has no ca.crt` };
    const checked = checkCaBundle(data);
    if (!checked.ok)
      return {
        ok: false,
        reason: 'InvalidCACertificateRef',
        message: `ConfigMap ${ref.name} ca.crt ${checked.message}`,
      };
    pems.push(checked.value);
  }
  return { ok: true, pem: pems.join('') };
}

/**
 * backendTls judges every BackendTLSPolicy against the routes served: for each targeted Service port the oldest
 * policy naming that port (sectionName) wins, else the oldest naming the whole Service; a policy that loses its
 * every target to an older one is Accepted=False/Conflicted. The ancestors are the Gateways of ours whose routes
 * send to a targeted Service.
 */
export function backendTls(input: BackendTlsInput): BackendTlsResult {
  const problems: Problem[] = [];
  const policies = input.policies
    .map(readBackendTLSPolicy)
    .filter((p): p is BackendTLSPolicy => p !== null)
    .sort((a, b) => byAge(a.meta, b.meta));
  for (const p of policies)
    for (const i of p.invalid)
      problems.push({ kind: 'BackendTLSPolicy', namespace: p.meta.namespace, name: p.meta.name, ...i });
  // the Service ports our routes send to, and the Gateways that send there
  const used = new Map<string, { namespace: string; name: string; port: number; gateways: Map<string, ObjectRef> }>();
  for (const l of input.routes.listeners)
    for (const h of l.hosts)
      for (const r of h.routes)
        for (const b of [...r.backends, ...r.mirrors]) {
          if (b.kind !== 'service') continue;
          const k = upstreamOf(b.namespace, b.name, b.port);
          const entry = used.get(k) ?? { namespace: b.namespace, name: b.name, port: b.port, gateways: new Map() };
          entry.gateways.set(`${l.gateway.namespace}/${l.gateway.name}`, l.gateway);
          used.set(k, entry);
        }
  const portName = (namespace: string, service: string, port: number) =>
    input.services
      .find((s) => s.metadata?.namespace === namespace && s.metadata?.name === service)
      ?.spec?.ports?.find((p) => p.port === port)?.name;
  const byUpstream = new Map<string, BackendTlsVerdict>();
  const won = new Set<BackendTLSPolicy>();
  const lost = new Set<BackendTLSPolicy>();
  const ancestors = new Map<BackendTLSPolicy, Map<string, ObjectRef>>();
  const cas = new Map(policies.map((p) => [p, caOf(p, input.configMaps)]));
  for (const [upstream, u] of used) {
    const section = portName(u.namespace, u.name, u.port);
    const targets = (p: BackendTLSPolicy, withSection: boolean) =>
      p.meta.namespace === u.namespace &&
      p.targets.some(
        (t) =>
          t.name === u.name &&
          (withSection ? t.sectionName !== undefined && t.sectionName === section : t.sectionName === undefined),
      );
    // every policy targeting the Service has these Gateways as ancestors, the one that applies or not
    for (const p of policies.filter((p) => targets(p, true) || targets(p, false))) {
      const seen = ancestors.get(p) ?? new Map<string, ObjectRef>();
      for (const [k, g] of u.gateways) seen.set(k, g);
      ancestors.set(p, seen);
    }
    for (const withSection of [true, false]) {
      const candidates = policies.filter((p) => targets(p, withSection));
      if (candidates.length === 0) continue;
      const [first, ...rest] = candidates;
      won.add(first!);
      for (const p of rest) lost.add(p);
      const ca = cas.get(first!)!;
      const policy = `${first!.meta.namespace}/${first!.meta.name}`;
      if (first!.invalid.length > 0 || first!.hostname === undefined)
        byUpstream.set(upstream, { refused: `BackendTLSPolicy ${policy} is invalid` });
      else if (!ca.ok) byUpstream.set(upstream, { refused: `BackendTLSPolicy ${policy}: ${ca.message}` });
      else byUpstream.set(upstream, { hostname: first!.hostname, caPem: ca.pem, key: caKey(ca.pem), policy });
      break;
    }
  }
  const status: PolicyStatus[] = [];
  for (const p of policies) {
    const gateways = ancestors.get(p);
    if (gateways === undefined) continue;
    const gen = p.meta.generation;
    const ca = cas.get(p)!;
    const conditions: Condition[] = [];
    if (p.invalid.length > 0)
      conditions.push(
        cond('Accepted', false, 'Invalid', p.invalid.map((i) => `${i.field}: ${i.message}`).join('; '), gen),
      );
    else if (!ca.ok) conditions.push(cond('Accepted', false, 'NoValidCACertificate', ca.message, gen));
    else if (lost.has(p) && !won.has(p))
      conditions.push(
        cond('Accepted', false, 'Conflicted', 'an older BackendTLSPolicy targets the same Service port', gen),
      );
    else conditions.push(cond('Accepted', true, 'Accepted', 'Policy accepted', gen));
    conditions.push(
      ca.ok
        ? cond('ResolvedRefs', true, 'ResolvedRefs', 'CA certificates resolved', gen)
        : cond('ResolvedRefs', false, ca.reason, ca.message, gen),
    );
    status.push({
      namespace: p.meta.namespace,
      name: p.meta.name,
      ancestors: [...gateways.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([, g]) => ({ ancestorRef: g, conditions })),
    });
  }
  return { byUpstream, status, problems };
}

/** caKey names a CA bundle: 16 hex digits of its digest (the system bundle: `system`'s). */
export function caKey(pem: string | null): string {
  return createHash('sha256')
    .update(pem ?? 'system')
    .digest('hex')
    .slice(0, 16);
}
