/**
 * The annotation registry: every module, what it declares and the one entry point buildModel
 * calls. The compatibility table (docs/annotations.md) is generated from these lists.
 */
import { RISK_LEVELS } from '../config-map/validators.js';
import type { GlobalConfig, Problem } from '../nginx-model.js';
import type { NginxModules } from '../machine-settings.js';
import type { Ingress, Secret } from '../snapshot.js';
import { affinityGroup } from './affinity.js';
import { authGroup } from './auth.js';
import { backendProtocolGroup } from './backend-protocol.js';
import { canaryGroup } from './canary.js';
import { clientGroup } from './client.js';
import { externalAuthGroup } from './external-auth.js';
import { authTlsGroup } from './auth-tls.js';
import { proxySslGroup } from './proxy-ssl.js';
import { corsGroup } from './cors.js';
import { customHttpErrorsGroup } from './custom-http-errors.js';
import { defaultBackendGroup } from './default-backend.js';
import { loadBalanceGroup } from './load-balance.js';
import { proxyGroup } from './proxy.js';
import { rateLimitGroup } from './rate-limit.js';
import { redirectGroup } from './redirect.js';
import { refusedAnnotations } from './refused.js';
import { rewriteGroup } from './rewrite.js';
import { snippetsGroup } from './snippets.js';
import { modsecurityGroup } from './modsecurity.js';
import { sourceRangeGroup } from './source-range.js';
import { closestName } from './suggest.js';
import { checkBool } from '../validate.js';
import {
  ANNOTATION_PREFIX,
  type AnnotationGroup,
  type AnnotationInput,
  type AnnotationKey,
  type IngressAnnotations,
  type OnInvalid,
  type RefusedAnnotation,
} from './types.js';
import { sslPassthroughGroup } from './ssl-passthrough.js';
import { upstreamVhostGroup } from './upstream-vhost.js';
import { forwardedPrefixGroup } from './forwarded-prefix.js';
import { tracingGroup } from './tracing.js';

/** annotationGroups is every supported annotation module, in the compatibility table's order. */
export const annotationGroups: readonly AnnotationGroup[] = [
  rewriteGroup,
  redirectGroup,
  backendProtocolGroup,
  upstreamVhostGroup,
  forwardedPrefixGroup,
  defaultBackendGroup,
  customHttpErrorsGroup,
  clientGroup,
  proxyGroup,
  sourceRangeGroup,
  authGroup,
  externalAuthGroup,
  authTlsGroup,
  proxySslGroup,
  corsGroup,
  rateLimitGroup,
  affinityGroup,
  loadBalanceGroup,
  canaryGroup,
  snippetsGroup,
  modsecurityGroup,
  sslPassthroughGroup,
  tracingGroup,
] as readonly AnnotationGroup[];

/** supportedKeys lists every supported key with its group, aliases included under their key. */
export const supportedKeys: readonly { readonly group: string; readonly key: AnnotationKey }[] =
  annotationGroups.flatMap((g) => g.keys.map((key) => ({ group: g.name, key })));

const byName = new Map<string, AnnotationKey>();
for (const { key } of supportedKeys) for (const name of [key.key, ...(key.aliases ?? [])]) byName.set(name, key);
const refusedByName = new Map<string, RefusedAnnotation>(refusedAnnotations.map((r) => [r.key, r]));
const SNIPPET_KEYS: ReadonlySet<string> = new Set([...snippetsGroup.keys.map((k) => k.key), 'modsecurity-snippet']);

/** riskFix says how to allow an annotation above the risk level: the ConfigMap keys to set. */
function riskFix(key: string, risk: string, config: GlobalConfig): string {
  if (SNIPPET_KEYS.has(key) && !config.allowSnippetAnnotations) {
    return (
      'snippets need allow-snippet-annotations: "true" and annotations-risk-level: ' +
      'Critical in the controller ConfigMap'
    );
  }
  return `to allow it, set annotations-risk-level: ${risk} in the controller ConfigMap`;
}

/** unknownKeyMessage is the problem for an unknown key, with the known key it is likely a misspelling of. */
function unknownKeyMessage(key: string): string {
  const near = closestName(key, byName.keys());
  return near === null
    ? 'is not an annotation this controller knows; ignored'
    : `is not an annotation this controller knows (did you mean ${ANNOTATION_PREFIX}${near}?); ignored`;
}

/** AnnotationContext is what parseAnnotations needs beyond the Ingress. */
export interface AnnotationContext {
  readonly config: GlobalConfig;
  readonly modules: NginxModules;
  readonly secret: (namespace: string, name: string) => Secret | undefined;
  readonly problems: Problem[];
}

/** OUTCOMES are the endings of annotation problems: what happened to the key (and to its Ingress). */
const OUTCOMES = {
  ignore: 'ignored, the default applies',
  deny: 'its locations answer 503',
  entry: 'dropped, the valid entries are kept',
  note: 'ignored',
  canary: 'canary Ingress left out',
} as const;
type Outcome = keyof typeof OUTCOMES;

/**
 * outcomeOf applies a key's OnInvalid rule to one problem: `entry` when the problem is about one
 * entry of a list (only a `filter` key keeps the others; a bad list of any other key is ignored whole).
 */
export function outcomeOf(rule: OnInvalid, entry: boolean): Outcome {
  if (rule === 'deny') return 'deny';
  return rule === 'filter' && entry ? 'entry' : 'ignore';
}

/**
 * isCanary says whether an Ingress's `canary` value makes it a canary; a value that is not a
 * boolean counts as one, so a typo never turns a canary into a second main Ingress.
 */
export function isCanary(value: string | undefined): boolean {
  if (value === undefined || value === '') return false;
  const checked = checkBool(value);
  return !checked.ok || checked.value;
}

/**
 * parseAnnotations reads an Ingress's `nginx.ingress.kubernetes.io/*` annotations into typed
 * fields. A problem naming `metadata.annotations.<key>` reports each invalid value, annotation
 * riskier than annotations-risk-level and refused annotation, and each key's OnInvalid rule says
 * what it costs: the key alone (ignored, its default applies; or, for lists, the bad entries) or,
 * for a security key, the Ingress's locations (`denied`: they answer 503). A canary Ingress with
 * any of these is left out as a whole (null), as before: its own annotations barely matter and a
 * broken canary must not take traffic.
 */
export function parseAnnotations(
  ingress: Ingress,
  namespace: string,
  name: string,
  ctx: AnnotationContext,
): IngressAnnotations | null {
  const raw = ingress.metadata?.annotations ?? {};
  const values = new Map<string, string>();
  for (const [full, value] of Object.entries(raw)) {
    if (full.startsWith(ANNOTATION_PREFIX) && typeof value === 'string')
      values.set(full.slice(ANNOTATION_PREFIX.length), value);
  }
  const canary = isCanary(values.get('canary'));
  let leftOut = false;
  let denied = false;
  const report = (key: string, message: string) =>
    ctx.problems.push({
      kind: 'Ingress',
      namespace,
      name,
      field: `metadata.annotations.${ANNOTATION_PREFIX}${key}`,
      message,
    });
  const fail = (key: string, message: string, outcome: Outcome) => {
    const ending = canary && outcome !== 'note' ? 'canary' : outcome;
    report(key, `${message}; ${OUTCOMES[ending]}`);
    if (ending === 'canary') leftOut = true;
    if (ending === 'deny') denied = true;
  };
  const maxRisk = RISK_LEVELS.indexOf(ctx.config.annotationsRiskLevel);

  for (const key of [...values.keys()].sort()) {
    const known = byName.get(key);
    const refused = refusedByName.get(key);
    const risk = known?.risk ?? refused?.risk;
    if (risk !== undefined && RISK_LEVELS.indexOf(risk) > maxRisk) {
      // Parsers never see it; a snippet is ignored, a security key fails closed, anything else is ignored.
      values.delete(key);
      const rule = known?.onInvalid ?? (refused?.effect === 'denied' ? 'deny' : 'ignore');
      const outcome = SNIPPET_KEYS.has(key) || refused?.effect === 'ignored' ? 'note' : outcomeOf(rule, false);
      fail(
        key,
        `is ${risk} risk, above annotations-risk-level ${ctx.config.annotationsRiskLevel}` +
          `${known ? ` (${riskFix(key, risk, ctx.config)})` : ''}`,
        outcome,
      );
    } else if (refused?.effect === 'denied') {
      fail(key, `is not supported: ${refused.reason}`, 'deny');
    } else if (refused) {
      report(key, `is not supported (${refused.reason}); ignored`);
    } else if (!known) {
      report(key, unknownKeyMessage(key));
    }
  }

  const keyOf = (key: string) => {
    if (values.get(key)) return key;
    return byName.get(key)?.aliases?.find((alias) => values.get(alias)) ?? key;
  };
  const input: AnnotationInput = {
    namespace,
    name,
    config: ctx.config,
    modules: ctx.modules,
    get: (key) => values.get(keyOf(key)) || undefined,
    keyOf,
    invalid: (key, message, entry) =>
      fail(keyOf(key), message, outcomeOf(byName.get(key)?.onInvalid ?? 'ignore', entry === 'entry')),
    note: (key, message) => fail(keyOf(key), message, 'note'),
    secret: ctx.secret,
  };
  const result: Record<string, unknown> = {};
  for (const group of annotationGroups) result[group.field] = group.parse(input);
  result.denied = denied;
  return leftOut ? null : (result as unknown as IngressAnnotations);
}

/** NO_ANNOTATIONS is what an Ingress without annotations asks for, for the routes buildModel makes itself. */
export const NO_ANNOTATIONS: IngressAnnotations = Object.freeze({
  rewrite: { target: null, useRegex: false, appRoot: null, sslRedirect: null, forceSslRedirect: null },
  redirect: null,
  backendProtocol: 'http',
  upstreamVhost: null,
  forwardedPrefix: null,
  defaultBackend: null,
  customHttpErrors: [],
  client: null,
  proxy: null,
  access: null,
  auth: null,
  externalAuth: null,
  authTls: null,
  proxySsl: null,
  cors: null,
  rateLimit: null,
  affinity: null,
  balance: { leastConn: null, hashBy: null, serviceUpstream: false },
  canary: null,
  snippets: { configuration: null, server: null },
  denied: false,
  modsecurity: null,
  sslPassthrough: false,
  tracing: { enabled: null, trustIncoming: null, operationName: null },
});
