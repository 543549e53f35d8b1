/**
 * Which Secrets matter to nginx.conf, from the model itself: the ones the last build's plans
 * read (annotations such as auth-secret and auth-tls-secret through their TrackedReads, and
 * every `spec.tls` secretName), and the default certificate's. A change of any other Secret
 * cannot change the config, so the Secret watcher reports only these (src/actors/watcher.ts).
 */
import type { BuildOptions } from '../build-types.js';
import type { BuildMemo } from './memo.js';

/** SecretsRead are the Secrets the last build read, and the namespaces in which every Secret counts. */
export interface SecretsRead {
  /** `namespace/name`, sorted */
  readonly keys: readonly string[];
  /** namespaces of Ingresses held out of the build (their Secrets are not read, yet a renewed one lets them back in) */
  readonly namespaces: readonly string[];
  /**
   * the keys read only as an Ingress's `spec.tls` certificate, outside those namespaces: with the Lua balancer such a
   * certificate is pushed, never named in nginx.conf (a host whose Secret is unusable gets the default certificate
   * from the table too), so a change of these Secrets cannot change the config
   */
  readonly certificatesOnly: readonly string[];
}

/** secretsRead lists what the last build with `memo` read; `held` are the Ingresses (namespace/name) left out of it. */
export function secretsRead(memo: BuildMemo, options: BuildOptions, held: readonly string[] = []): SecretsRead {
  // Read otherwise: by an annotation (a file in nginx.conf: htpasswd, CA) or as the default certificate (a file).
  const asFile = new Set<string>();
  const asCertificate = new Set<string>();
  if (options.defaultSslCertificate) asFile.add(options.defaultSslCertificate);
  for (const plan of memo.planList) {
    for (const key of plan.reads.secretKeys()) asFile.add(key);
    if (!plan.identified) continue;
    // The TLS Secrets are checked by the CertificateTable while hosts are settled, not through the plan's reads.
    for (const step of plan.tls)
      if (step.kind === 'claim' && step.secretName)
        asCertificate.add(`${plan.identified.namespace}/${step.secretName}`);
  }
  const namespaces = new Set(held.map((key) => key.slice(0, key.indexOf('/'))));
  const keys = new Set([...asFile, ...asCertificate]);
  const certificatesOnly = [...asCertificate].filter(
    (key) => !asFile.has(key) && !namespaces.has(key.slice(0, key.indexOf('/'))),
  );
  return { keys: [...keys].sort(), namespaces: [...namespaces].sort(), certificatesOnly: certificatesOnly.sort() };
}
