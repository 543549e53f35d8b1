/**
 * Frontend client-certificate validation (a Gateway's `spec.tls.frontend`): the CA bundle an HTTPS listener asks its
 * clients' certificates to chain to, per port (`perPort`) or by `default`, and the mode (AllowValidOnly: nginx's
 * `ssl_verify_client on`; AllowInsecureFallback: `optional_no_ca`, every client let in). Pure: the ConfigMaps are
 * untrusted data; a CA reaches nginx only as PEM certificates checked here.
 */
import { checkCaBundle } from '../annotations/auth-tls.js';
import type { ConfigMap } from '../snapshot.js';
import { checkObjectName, checkPortNumber } from '../validate.js';
import { list, rec, text } from './read-fields.js';
import { isGranted } from './refs.js';
import {
  type FrontendMode,
  type FrontendTls,
  type FrontendValidation,
  GATEWAY_GROUP,
  type ReferenceGrant,
} from './types.js';

function readValidation(raw: unknown): FrontendValidation | undefined {
  const v = rec(raw);
  if (raw === undefined || raw === null) return undefined;
  const caRefs = list(v.caCertificateRefs).map((r) => {
    const ref = rec(r);
    return {
      group: text(ref.group) ?? '',
      kind: text(ref.kind) ?? '',
      name: text(ref.name) ?? '',
      namespace: text(ref.namespace),
    };
  });
  const mode = v.mode === 'AllowValidOnly' || v.mode === 'AllowInsecureFallback' ? v.mode : undefined;
  return { caRefs, mode };
}

/** readFrontendTls reads a Gateway spec's `tls.frontend`; undefined when absent. */
export function readFrontendTls(spec: unknown): FrontendTls | undefined {
  const frontend = rec(rec(rec(spec).tls).frontend);
  if (Object.keys(frontend).length === 0) return undefined;
  const perPort = new Map<number, FrontendValidation>();
  for (const raw of list(frontend.perPort)) {
    const p = rec(raw);
    const port = checkPortNumber(p.port);
    const validation = readValidation(rec(p.tls).validation);
    if (port.ok && validation) perPort.set(port.value, validation);
  }
  return { default: readValidation(rec(frontend.default).validation), perPort };
}

/** ClientCa is what an HTTPS listener's server verifies client certificates with. */
export interface ClientCa {
  readonly pem: string;
  readonly mode: FrontendMode;
}

/** ClientCaVerdict: the CA to verify with, none (no validation for the port), or why the listener cannot be served. */
export type ClientCaVerdict =
  | { readonly ok: true; readonly ca: ClientCa | null }
  | {
      readonly ok: false;
      readonly reason: 'InvalidCACertificateRef' | 'InvalidCACertificateKind' | 'RefNotPermitted';
      readonly message: string;
    };

/**
 * clientCaOf judges the validation an HTTPS listener on `port` gets (`perPort` first, else `default`): its
 * ConfigMaps (in the Gateway's namespace, or another one a ReferenceGrant allows) each with PEM certificates under
 * `ca.crt`.
 */
export function clientCaOf(
  frontend: FrontendTls | undefined,
  port: number,
  gatewayNamespace: string,
  configMaps: readonly ConfigMap[],
  grants: readonly ReferenceGrant[],
): ClientCaVerdict {
  const validation = frontend?.perPort.get(port) ?? frontend?.default;
  if (validation === undefined) return { ok: true, ca: null };
  if (validation.caRefs.length === 0)
    return { ok: false, reason: 'InvalidCACertificateRef', message: 'no caCertificateRefs' };
  const pems: string[] = [];
  for (const ref of validation.caRefs) {
    if (ref.group !== '' || ref.kind !== 'ConfigMap')
      return { ok: false, reason: 'InvalidCACertificateKind', message: `${ref.kind} ${ref.name} is not a ConfigMap` };
    const name = checkObjectName(ref.name);
    if (!name.ok) return { ok: false, reason: 'InvalidCACertificateRef', message: `ConfigMap name ${name.message}` };
    const namespace = ref.namespace ?? gatewayNamespace;
    const granted = isGranted(grants, {
      fromGroup: GATEWAY_GROUP,
      fromKind: 'Gateway',
      fromNamespace: gatewayNamespace,
      toGroup: '',
      toKind: 'ConfigMap',
      toNamespace: namespace,
      toName: name.value,
    });
    if (!granted)
      return {
        ok: false,
        reason: 'RefNotPermitted',
        message: `no ReferenceGrant in ${namespace} allows ConfigMap ${name.value}`,
      };
    const data = configMaps.find((m) => m.metadata?.namespace === namespace && m.metadata?.name === name.value)?.data?.[
      'ca.crt'
    ];
    if (data === undefined)
      return {
        ok: false,
        reason: 'InvalidCACertificateRef',
        message: `ConfigMap ${namespace}/${name.value} has no ca.crt`,
      };
    const checked = checkCaBundle(data);
    if (!checked.ok)
      return {
        ok: false,
        reason: 'InvalidCACertificateRef',
        message: `ConfigMap ${namespace}/${name.value} ca.crt ${checked.message}`,
      };
    pems.push(checked.value);
  }
  return { ok: true, ca: { pem: pems.join(''), mode: validation.mode ?? 'AllowValidOnly' } };
}

/** insecureFallback says whether any validation of the Gateway lets clients in without a valid certificate. */
export function insecureFallback(frontend: FrontendTls | undefined): boolean {
  if (frontend === undefined) return false;
  return [frontend.default, ...frontend.perPort.values()].some((v) => v?.mode === 'AllowInsecureFallback');
}
