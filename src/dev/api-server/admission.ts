/**
 * Validating admission webhooks, as kube-apiserver calls them: on each create and update (not
 * /status unless a rule names it), every admissionregistration.k8s.io/v1
 * ValidatingWebhookConfiguration webhook whose rules, namespaceSelector and objectSelector match
 * gets an admission.k8s.io/v1 AdmissionReview over HTTPS (`clientConfig.url`, verified with
 * `caBundle`), within `timeoutSeconds` (10 by default). A denial becomes the request's error
 * (`admission webhook "<name>" denied the request: <message>`, 400 unless the webhook says more);
 * a call that fails is an InternalError (500) under failurePolicy Fail (the default) and is
 * passed over under Ignore. Warnings go out as the request's `Warning` headers. DELETE and
 * CONNECT rules are not called. `clientConfig.service` is reached through the server's ServiceNetwork
 * when it routes that Service (a test's stand-in for the cluster network: the address is loopback,
 * but the certificate is verified for `<name>.<namespace>.svc`, as kube-apiserver does); otherwise it
 * fails as a call to an unreachable Service would.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:https';
import { ApiError } from './status.js';
import type { KubeObject } from './objects.js';
import { builtinKind, type ResourceDef } from './resources.js';

/** Operation is what a write is to admission. */
export type Operation = 'CREATE' | 'UPDATE';

/** Attributes describe one write, as the AdmissionReview's request does. */
export interface Attributes {
  readonly resource: ResourceDef;
  readonly subresource?: string;
  readonly operation: Operation;
  /** the object as it would be stored (defaults, uid and timestamps set) */
  readonly object: KubeObject;
  readonly oldObject?: KubeObject;
  readonly dryRun: boolean;
  /** the labels of the object's namespace (for namespaceSelector); undefined for cluster-scoped objects */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
}

/**
 * ServiceNetwork routes a webhook's `clientConfig.service` to where it listens here (host and port), or undefined
 * when nothing serves that Service.
 */
export type ServiceNetwork = (service: {
  readonly namespace: string;
  readonly name: string;
  readonly port: number;
}) => { readonly host: string; readonly port: number } | undefined;

/** The webhook fields of a ValidatingWebhookConfiguration that this server acts on. */
interface Webhook {
  name?: string;
  clientConfig?: {
    url?: string;
    caBundle?: string;
    service?: { namespace?: string; name?: string; port?: number; path?: string };
  };
  rules?: Rule[];
  failurePolicy?: 'Fail' | 'Ignore';
  namespaceSelector?: LabelSelector;
  objectSelector?: LabelSelector;
  sideEffects?: string;
  timeoutSeconds?: number;
  admissionReviewVersions?: string[];
}

interface Rule {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

/** LabelSelector is metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** The kinds whose writes never go through webhooks, as in kube-apiserver: a webhook must not lock itself in. */
const EXEMPT = new Set<string | undefined>(['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration']);

const anyOf = (list: readonly string[] | undefined, value: string) =>
  (list ?? []).some((item) => item === '*' || item === value);

/** ruleMatches is a rule against a write: operation, group, version, resource (with subresource) and scope. */
function ruleMatches(rule: Rule, a: Attributes): boolean {
  const { resource } = a;
  if (!anyOf(rule.operations, a.operation)) return false;
  if (!anyOf(rule.apiGroups, resource.group) || !anyOf(rule.apiVersions, resource.version)) return false;
  const full = a.subresource ? `${resource.plural}/${a.subresource}` : resource.plural;
  const resourceMatches = (rule.resources ?? []).some((r) => {
    if (r === '*/*' || r === full) return true;
    const [res, sub] = r.split('/');
    if (a.subresource) return (res === '*' || res === resource.plural) && sub === '*';
    return r === '*';
  });
  if (!resourceMatches) return false;
  const scope = rule.scope ?? '*';
  return scope === '*' || (scope === 'Namespaced') === resource.namespaced;
}

/** selects says whether a LabelSelector selects these labels (an absent selector selects everything). */
export function selects(selector: LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, key);
    const ok =
      operator === 'In'
        ? has && values.includes(labels[key]!)
        : operator === 'NotIn'
          ? !has || !values.includes(labels[key]!)
          : operator === 'Exists'
            ? has
            : operator === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

/** matches is a webhook against a write: a rule, the namespace's labels and the object's (new or old) labels. */
function matches(webhook: Webhook, a: Attributes): boolean {
  if (!(webhook.rules ?? []).some((rule) => ruleMatches(rule, a))) return false;
  // Cluster-scoped objects have no namespace to select on; a Namespace is selected by its own labels.
  const namespaceLabels = a.resource.kind === 'Namespace' ? (a.object.metadata.labels ?? {}) : a.namespaceLabels;
  if (namespaceLabels !== undefined && !selects(webhook.namespaceSelector, namespaceLabels)) return false;
  const labelsOf = (o: KubeObject | undefined) => o?.metadata.labels ?? {};
  return (
    selects(webhook.objectSelector, labelsOf(a.object)) ||
    (a.oldObject !== undefined && selects(webhook.objectSelector, labelsOf(a.oldObject)))
  );
}

/** The answer of one webhook: denied (with its Status), or allowed with warnings. */
interface Answer {
  readonly allowed: boolean;
  readonly status?: { code?: number; reason?: string; message?: string };
  readonly warnings: readonly string[];
}

/** CallFailed is a webhook that could not be asked or answered nonsense: failurePolicy decides. */
class CallFailed extends Error {}

/**
 * validate calls every matching webhook of `configurations` (in parallel, as kube-apiserver
 * does) and throws the ApiError of the first denial or failed call under Fail; the warnings of
 * the others are pushed onto `warnings`.
 */
export async function validate(
  configurations: readonly KubeObject[],
  a: Attributes,
  warnings: string[],
  network?: ServiceNetwork,
): Promise<void> {
  if (EXEMPT.has(builtinKind(a.resource))) return;
  const webhooks = configurations
    .flatMap((c) => ((c as { webhooks?: Webhook[] }).webhooks ?? []) as Webhook[])
    .filter((w) => matches(w, a));
  if (webhooks.length === 0) return;
  const results = await Promise.all(
    webhooks.map(async (webhook) => {
      const name = webhook.name ?? '';
      if (a.dryRun && webhook.sideEffects !== 'None' && webhook.sideEffects !== 'NoneOnDryRun')
        return new ApiError(400, 'BadRequest', `admission webhook "${name}" does not support dry run`);
      try {
        const answer = await call(webhook, a, network);
        warnings.push(...answer.warnings);
        return answer.allowed ? null : denial(name, answer.status);
      } catch (error) {
        if (!(error instanceof CallFailed)) throw error;
        if (webhook.failurePolicy === 'Ignore') return null;
        return new ApiError(
          500,
          'InternalError',
          `Internal error occurred: failed calling webhook "${name}": ${error.message}`,
        );
      }
    }),
  );
  const refused = results.find((r) => r !== null);
  if (refused) throw refused;
}

/** denial is kube-apiserver's error for a webhook's refusal: at least 400, its message after who denied. */
function denial(name: string, status: Answer['status']): ApiError {
  const deniedBy = `admission webhook "${name}" denied the request`;
  const code = status?.code !== undefined && status.code >= 400 ? status.code : 400;
  const message = status?.message
    ? `${deniedBy}: ${status.message}`
    : status?.reason
      ? `${deniedBy}: ${status.reason}`
      : `${deniedBy} without explanation`;
  return new ApiError(code, status?.reason ?? '', message);
}

/** call posts the AdmissionReview and checks the answer; CallFailed for anything that is not a verdict. */
async function call(webhook: Webhook, a: Attributes, network?: ServiceNetwork): Promise<Answer> {
  if (!(webhook.admissionReviewVersions ?? []).includes('v1'))
    throw new CallFailed('none of the admissionReviewVersions is v1, the one this server speaks');
  const { target, servername } = targetOf(webhook, network);
  const seconds = Math.min(30, Math.max(1, webhook.timeoutSeconds ?? 10));
  const url = new URL(target);
  url.searchParams.set('timeout', `${seconds}s`);
  const uid = randomUUID();
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: a.resource.group, version: a.resource.version, kind: a.resource.kind },
      resource: { group: a.resource.group, version: a.resource.version, resource: a.resource.plural },
      ...(a.subresource ? { subResource: a.subresource } : {}),
      requestKind: { group: a.resource.group, version: a.resource.version, kind: a.resource.kind },
      requestResource: { group: a.resource.group, version: a.resource.version, resource: a.resource.plural },
      name: a.object.metadata.name,
      ...(a.object.metadata.namespace ? { namespace: a.object.metadata.namespace } : {}),
      operation: a.operation,
      userInfo: { username: 'ingress-actors-test-user', groups: ['system:authenticated'] },
      object: a.object,
      oldObject: a.oldObject ?? null,
      dryRun: a.dryRun,
      options: {
        apiVersion: 'meta.k8s.io/v1',
        kind: a.operation === 'CREATE' ? 'CreateOptions' : 'UpdateOptions',
      },
    },
  };
  // As kube-apiserver writes it: a Service by its DNS name.
  const shown = servername
    ? new URL(url.pathname + url.search, `https://${servername}:${webhook.clientConfig?.service?.port ?? 443}`)
    : url;
  const post = `Post "${shown.href}"`;
  const text = await postJson(url, review, webhook.clientConfig?.caBundle, seconds * 1000, servername).catch(
    (error: Error) => {
      throw new CallFailed(`failed to call webhook: ${post}: ${error.message}`);
    },
  );
  let body: { apiVersion?: unknown; kind?: unknown; response?: Record<string, unknown> };
  try {
    body = JSON.parse(text);
  } catch {
    throw new CallFailed('received invalid webhook response: the body is not JSON');
  }
  const response = body?.response;
  if (body?.apiVersion !== 'admission.k8s.io/v1' || body.kind !== 'AdmissionReview' || !response)
    throw new CallFailed('received invalid webhook response: expected an admission.k8s.io/v1 AdmissionReview');
  if (response.uid !== uid) throw new CallFailed(`expected response.uid="${uid}", got "${String(response.uid)}"`);
  if (typeof response.allowed !== 'boolean') throw new CallFailed('received invalid webhook response: no allowed');
  const warnings = Array.isArray(response.warnings) ? response.warnings.filter((w) => typeof w === 'string') : [];
  return { allowed: response.allowed, status: response.status as Answer['status'], warnings };
}

/** targetOf is the URL to call, and for a Service the name its certificate must be valid for. */
function targetOf(webhook: Webhook, network?: ServiceNetwork): { target: string; servername?: string } {
  const url = webhook.clientConfig?.url;
  if (url) return { target: url };
  const service = webhook.clientConfig?.service;
  const ref = service?.namespace && service.name ? { namespace: service.namespace, name: service.name } : null;
  const route = ref && network?.({ ...ref, port: service?.port ?? 443 });
  if (!ref || !route)
    throw new CallFailed('failed to call webhook: clientConfig.service has no cluster network here; give a url');
  const host = route.host.includes(':') ? `[${route.host}]` : route.host;
  return {
    target: `https://${host}:${route.port}${service?.path ?? ''}`,
    servername: `${ref.name}.${ref.namespace}.svc`,
  };
}

/** postJson POSTs over HTTPS, verifying the server with `caBundle` (base64 PEM) when given, within `ms`. */
function postJson(
  url: URL,
  body: unknown,
  caBundle: string | undefined,
  ms: number,
  servername?: string,
): Promise<string> {
  if (url.protocol !== 'https:') return Promise.reject(new Error('webhook URLs must be https'));
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
        ...(caBundle ? { ca: Buffer.from(caBundle, 'base64').toString('utf8') } : {}),
        // A Service is called by its DNS name: SNI and the certificate check use it, whatever address it routes to.
        ...(servername ? { servername } : {}),
        agent: false,
        signal: AbortSignal.timeout(ms),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > 3 * 1024 * 1024) req.destroy(new Error('the response is over 3 MB'));
          else chunks.push(chunk);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200)
            reject(new Error(`the server answered ${res.statusCode}: ${text.trim().slice(0, 200)}`));
          else resolve(text);
        });
        res.on('error', reject);
      },
    );
    req.on('error', (error: Error) =>
      reject(
        error.name === 'AbortError' || error.name === 'TimeoutError' ? new Error('context deadline exceeded') : error,
      ),
    );
    req.end(payload);
  });
}
