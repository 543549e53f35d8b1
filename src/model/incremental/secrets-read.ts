/**
 * Which Secrets matter to nginx.conf, from the model itself: the ones the last build's plans
 * read (annotations such as auth-secret and auth-tls-secret through their TrackedReads, and
 * every `spec.tls` secretName), the default certificate's and those our Gateways name. A change of any other Secret
 * cannot change the config, so the Secret watcher reports only these (src/actors/watcher.ts).
 */
import type { BuildOptions } from '../build-types.js';
import type { BuildMemo } from './memo.js';
import type { SecretsRead } from './secret-reads.js';

export type { SecretsRead };

/** secretsRead lists what the last build with `memo` read; `held` are the Ingresses (namespace/name) left out of it. */
export function secretsRead(memo: BuildMemo, options: BuildOptions, held: readonly string[] = []): SecretsRead {
  const read = memo.secretReads.of(memo.planList, options.defaultSslCertificate, held);
  // and the Secrets our Gateways name (src/model/gateway/secret-refs.ts)
  if (memo.gatewaySecrets.length === 0) return read;
  const known = new Set(read.keys);
  const more = memo.gatewaySecrets.filter((k) => !known.has(k));
  return more.length === 0 ? read : { ...read, keys: [...read.keys, ...more].sort() };
}
