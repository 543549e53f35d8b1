/**
 * The admission webhook's self-made certificate, in the cluster: one Secret that every replica serves from, and the
 * caBundle of the ValidatingWebhookConfiguration's webhooks that call our Service. Safe with several replicas: a
 * missing Secret is created (create is atomic: the replica that loses with 409 reads the winner's), a valid one is
 * never overwritten, and a renewal is an update with the read's resourceVersion (two replicas cannot both win). The
 * caBundle is patched only where it differs, one guarded JSON patch per webhook entry; every replica writing the
 * same value is harmless. Keys are never logged or written to disk.
 */
import type { AdmissionregistrationV1Api, CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { judgePair, newPairData, type SecretData, type ServingPair } from '../tls/webhook-pair.js';
import { apiCode, describeApiError } from './leader.js';

/** ObjectRef is a namespaced object's namespace and name. */
export interface ObjectRef {
  readonly namespace: string;
  readonly name: string;
}

/** WebhookCertOptions say which Secret, Service and ValidatingWebhookConfiguration, and which API clients. */
export interface WebhookCertOptions {
  readonly core: CoreV1Api;
  readonly admission: AdmissionregistrationV1Api;
  readonly secret: ObjectRef;
  readonly service: ObjectRef;
  /** the ValidatingWebhookConfiguration to patch; null: the caBundle is someone else's to set */
  readonly configuration: string | null;
  readonly dnsNames: readonly string[];
  readonly renewBeforeMs: number;
  /** the serving certificate's lifetime in days, for a new pair (tests make short ones) */
  readonly leafDays?: number;
  readonly now?: () => number;
}

/** Ensured is the Secret's pair as served, and what was done to get it. */
export interface Ensured {
  readonly pair: ServingPair;
  readonly resourceVersion: string;
  /** created: this replica made the Secret; renewed: it replaced the pair; kept: the Secret's pair served as it is */
  readonly action: 'created' | 'renewed' | 'kept';
  /** why the pair was renewed (null otherwise) */
  readonly why: string | null;
}

/** WebhookCertError is a failed step, with the object and what is missing, for the operator. */
export class WebhookCertError extends Error {}

const ref = (r: ObjectRef) => `${r.namespace}/${r.name}`;

/**
 * ensureWebhookSecret reads the Secret and returns its pair when it can be served as it is; otherwise makes a new one
 * and creates (absent) or updates (invalid, or near its end) the Secret. A lost race is settled by reading again.
 */
export async function ensureWebhookSecret(options: WebhookCertOptions): Promise<Ensured> {
  const { core, secret } = options;
  const now = options.now ?? Date.now;
  const wanted = () => ({ dnsNames: options.dnsNames, renewBeforeMs: options.renewBeforeMs, now: now() });
  const read = async (): Promise<V1Secret | null> => {
    try {
      return await core.readNamespacedSecret(secret);
    } catch (error) {
      if (apiCode(error) === 404) return null;
      throw new WebhookCertError(`reading Secret ${ref(secret)}: ${describeApiError(error)}`);
    }
  };
  const kept = (found: V1Secret, why: string): Ensured => {
    const verdict = judgePair(found.data ?? {}, wanted());
    if (!verdict.ok)
      throw new WebhookCertError(`Secret ${ref(secret)}, written by another replica (${why}), ${verdict.why}`);
    return { pair: verdict.pair, resourceVersion: found.metadata?.resourceVersion ?? '', action: 'kept', why: null };
  };

  const found = await read();
  if (!found) {
    const data = await newPairData({}, options.dnsNames, now(), options.leafDays);
    try {
      const made = await core.createNamespacedSecret({ namespace: secret.namespace, body: body(options, data) });
      return { ...servable(made, options, wanted()), action: 'created', why: null };
    } catch (error) {
      if (apiCode(error) !== 409)
        throw new WebhookCertError(`creating Secret ${ref(secret)}: ${describeApiError(error)}`);
      const winner = await read();
      if (!winner) throw new WebhookCertError(`Secret ${ref(secret)} was created and removed at once`);
      return kept(winner, 'it won the create');
    }
  }
  const data: SecretData = found.data ?? {};
  const verdict = judgePair(data, wanted());
  if (verdict.ok)
    return { pair: verdict.pair, resourceVersion: found.metadata?.resourceVersion ?? '', action: 'kept', why: null };
  const next = await newPairData(data, options.dnsNames, now(), options.leafDays);
  try {
    const updated = await core.replaceNamespacedSecret({
      ...secret,
      body: {
        ...body(options, next),
        // A Secret's type cannot change: an Opaque one of this name stays Opaque.
        type: found.type ?? 'kubernetes.io/tls',
        metadata: { ...found.metadata, name: secret.name, namespace: secret.namespace },
      },
    });
    return { ...servable(updated, options, wanted()), action: 'renewed', why: verdict.why };
  } catch (error) {
    if (apiCode(error) !== 409)
      throw new WebhookCertError(`updating Secret ${ref(secret)}: ${describeApiError(error)}`);
    const winner = await read();
    if (!winner) throw new WebhookCertError(`Secret ${ref(secret)} was removed while it was renewed`);
    return kept(winner, 'it renewed it first');
  }
}

/** servable judges what the API server stored (it is what every other replica will read). */
function servable(
  stored: V1Secret,
  options: WebhookCertOptions,
  wanted: Parameters<typeof judgePair>[1],
): Omit<Ensured, 'action' | 'why'> {
  const verdict = judgePair(stored.data ?? {}, wanted);
  if (!verdict.ok) throw new WebhookCertError(`Secret ${ref(options.secret)} as stored: ${verdict.why}`);
  return { pair: verdict.pair, resourceVersion: stored.metadata?.resourceVersion ?? '' };
}

function body(options: WebhookCertOptions, data: Record<string, string>): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: {
      name: options.secret.name,
      namespace: options.secret.namespace,
      labels: { 'app.kubernetes.io/name': 'ingress-actors', 'app.kubernetes.io/component': 'admission-webhook' },
    },
    data,
  };
}

/** Patched says how many of the configuration's webhooks call our Service, and how many got a new caBundle. */
export interface Patched {
  readonly matched: number;
  readonly patched: number;
}

/**
 * patchCaBundle sets `clientConfig.caBundle` of each webhook of the configuration whose `clientConfig.service` is
 * ours, where it differs: one JSON patch, each entry guarded by a `test` of its name (a reordered list fails the
 * patch instead of writing the wrong entry). Nothing is written when every caBundle is already right.
 */
export async function patchCaBundle(options: WebhookCertOptions, caPem: string): Promise<Patched> {
  const { admission, configuration, service } = options;
  if (configuration === null) return { matched: 0, patched: 0 };
  let vwc: Awaited<ReturnType<AdmissionregistrationV1Api['readValidatingWebhookConfiguration']>>;
  try {
    vwc = await admission.readValidatingWebhookConfiguration({ name: configuration });
  } catch (error) {
    throw new WebhookCertError(
      apiCode(error) === 404
        ? `ValidatingWebhookConfiguration ${configuration} does not exist (yet): its caBundle cannot be set`
        : `reading ValidatingWebhookConfiguration ${configuration}: ${describeApiError(error)}`,
    );
  }
  const caBundle = Buffer.from(caPem).toString('base64');
  const ours = (vwc.webhooks ?? [])
    .map((hook, index) => ({ hook, index }))
    .filter(
      ({ hook }) =>
        hook.clientConfig?.service?.namespace === service.namespace && hook.clientConfig.service.name === service.name,
    );
  if (ours.length === 0)
    throw new WebhookCertError(
      `ValidatingWebhookConfiguration ${configuration} has no webhook whose clientConfig.service is ${ref(service)}`,
    );
  const stale = ours.filter(({ hook }) => hook.clientConfig.caBundle !== caBundle);
  if (stale.length === 0) return { matched: ours.length, patched: 0 };
  const body = stale.flatMap(({ hook, index }) => [
    { op: 'test', path: `/webhooks/${index}/name`, value: hook.name },
    // add sets a member whether or not it exists (RFC 6902 §4.1).
    { op: 'add', path: `/webhooks/${index}/clientConfig/caBundle`, value: caBundle },
  ]);
  try {
    await admission.patchValidatingWebhookConfiguration({ name: configuration, body });
  } catch (error) {
    throw new WebhookCertError(
      `patching the caBundle of ValidatingWebhookConfiguration ${configuration}: ${describeApiError(error)}`,
    );
  }
  return { matched: ours.length, patched: stale.length };
}
