/**
 * The admission judge: would this Ingress, created or updated, be served as written? Pure: it
 * builds the controller's current snapshot with the candidate in it through buildModel and reads
 * the problems that name the candidate. It never runs nginx and writes nothing (ingress-nginx's
 * CVE-2025-1974 came from an admission check that ran `nginx -t` on a config made from webhook
 * input).
 */
import { BuildMemo, buildModel } from './build.js';
import type { BuildOptions } from './build-types.js';
import { isOurs } from './ingress-class.js';
import type { Problem } from './nginx-model.js';
import { formatProblem } from './problems.js';
import type { Ingress, IngressClass, Snapshot } from './snapshot.js';

/** AdmissionOperation is the AdmissionReview operation; only CREATE and UPDATE are judged. */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** Verdict is the judge's answer: allowed or not, the message of a denial, and warnings either way. */
export interface Verdict {
  readonly allowed: boolean;
  /** why it was denied: one `namespace/name: field: message` line per reason */
  readonly message: string;
  readonly warnings: readonly string[];
  /**
   * how many Ingresses the build that judged it held (the candidate among them); absent when it was allowed without a
   * build (not ours, not a create or update): ingress-nginx's `admission_tested_ingresses`, and whether it counts as
   * a check (`check_success`, `check_errors`)
   */
  readonly tested?: number;
}

/** JudgeOptions are the controller's build options and `--watch-namespace`. */
export interface JudgeOptions {
  readonly build: BuildOptions;
  /** `--watch-namespace`: Ingresses elsewhere are allowed without a look, as ingress-nginx does */
  readonly watchNamespace?: string | null;
}

// A created Ingress without a creation time (the API server sets one before admission; a hand-made
// review may not) is judged as the newest: it must not win a conflict by looking oldest.
const NEWEST = '9999-12-31T23:59:59Z';

/**
 * AdmissionJudge judges candidate Ingresses against the controller's snapshot. It keeps its own
 * BuildMemo (never the sync's: a judgement builds a state that may never exist), so each
 * judgement re-plans only the candidate and the Ingress it replaces, and re-settles their hosts.
 */
export class AdmissionJudge {
  private readonly memo = new BuildMemo();
  private lastBuild: BuildOptions | null = null;
  private lastIngressOnly: BuildOptions | null = null;

  /**
   * ingressOnly is `build` without the Gateway API: a verdict reads only the candidate Ingress's problems, which the
   * Gateway API part never gives, so a review need not run it. One object per options, as the memo keys on identity.
   */
  private ingressOnly(build: BuildOptions): BuildOptions {
    if (build !== this.lastBuild || this.lastIngressOnly === null) {
      const { gateway: _gateway, ...rest } = build;
      this.lastBuild = build;
      this.lastIngressOnly = rest;
    }
    return this.lastIngressOnly;
  }

  /**
   * warm builds `snapshot` into the memo, so that the first review after start, or after many
   * changes, costs one candidate and not a whole build.
   */
  warm(snapshot: Snapshot, options: JudgeOptions): void {
    buildModel(snapshot, this.ingressOnly(options.build), this.memo);
  }

  /** judge decides on `candidate` (the object after the operation) against `snapshot`. */
  judge(snapshot: Snapshot, options: JudgeOptions, operation: AdmissionOperation, candidate: Ingress): Verdict {
    const allow: Verdict = { allowed: true, message: '', warnings: [] };
    if (operation !== 'CREATE' && operation !== 'UPDATE') return allow;
    const meta = candidate.metadata ?? {};
    if ((meta as { deletionTimestamp?: unknown }).deletionTimestamp) return allow;
    if (options.watchNamespace && meta.namespace !== options.watchNamespace) return allow;
    if (!isOurs(candidate, classesByName(snapshot.ingressClasses), options.build)) return allow;
    const ingress = meta.creationTimestamp
      ? candidate
      : { ...candidate, metadata: { ...meta, creationTimestamp: NEWEST } };
    const tested = withCandidate(snapshot, ingress);
    const { problems } = buildModel(tested, this.ingressOnly(options.build), this.memo);
    const namespace = meta.namespace ?? '';
    const name = meta.name ?? '';
    const own = problems.filter((p) => p.kind === 'Ingress' && p.namespace === namespace && p.name === name);
    const denials = own.filter((p) => !warningOnly(p)).map(denialOf);
    const warnings = own.filter(warningOnly).map(formatProblem);
    return { allowed: denials.length === 0, message: denials.join('\n'), warnings, tested: tested.ingresses.length };
  }
}

function classesByName(classes: readonly IngressClass[]): Map<string, IngressClass> {
  const byName = new Map<string, IngressClass>();
  for (const c of classes) if (c.metadata?.name) byName.set(c.metadata.name, c);
  return byName;
}

/**
 * withCandidate is the snapshot with `candidate` in place of the Ingress of its name (an update:
 * same slot, so the build's age order is reused), or added at the end (a create).
 */
export function withCandidate(snapshot: Snapshot, candidate: Ingress): Snapshot {
  const { namespace, name } = candidate.metadata ?? {};
  const at = snapshot.ingresses.findIndex((i) => i.metadata?.namespace === namespace && i.metadata?.name === name);
  const ingresses = [...snapshot.ingresses];
  if (at >= 0) ingresses[at] = candidate;
  else ingresses.push(candidate);
  return { ...snapshot, ingresses };
}

// Objects an Ingress names may come after it (kubectl apply -f dir/, Helm hooks) or change on their own:
// ingress-nginx admits such an Ingress, and so do we, with a warning.
const DEPENDENCY =
  /^(?:Service \S+ (?:not found|has no port|port \S+ has no ready endpoints|is of type ExternalName)|Secret \S+ not found)/;

/**
 * warningOnly says whether a problem of the candidate is admitted with a warning: a Service or
 * Secret it names missing (or without endpoints), anything about its TLS certificates, a key nginx's OpenSSL does
 * not serve included (ingress-nginx never checks them on admission; the default certificate serves the host; the
 * Secret is another object, which may be filled or fixed later, as cert-manager does, and no webhook sees it change,
 * so denying the Ingress would block its unrelated edits without keeping the key out), and annotations
 * understood but ignored (unknown keys, notes, keys ignored by design), a resource backend (left out when
 * serving, as ingress-nginx leaves it). Everything else denies:
 * invalid values, hosts and paths, refused or disabled snippets, annotations above the risk
 * level, a host and path another Ingress serves.
 */
export function warningOnly(problem: Problem): boolean {
  if (DEPENDENCY.test(problem.message)) return true;
  // A resource backend is valid Kubernetes that ingress-nginx admits (and leaves out when serving, as we do).
  if (/^(?:spec\.rules\[\d+\]\.http\.paths\[\d+\]\.backend|spec\.defaultBackend)\.resource$/.test(problem.field))
    return true;
  if (problem.field.startsWith('spec.tls')) return true;
  const annotation = problem.field.startsWith('metadata.annotations.');
  // However serving treats them, a snippet and a key above the risk level are the administrator's "no", as in
  // ingress-nginx's admission.
  const refused = problem.field.endsWith('-snippet') || problem.message.includes('above annotations-risk-level');
  return annotation && !refused && problem.message.endsWith('; ignored');
}

const CONFLICT =
  /^host ("(?:[^"\\]|\\.)*") path ("(?:[^"\\]|\\.)*") \(\w+\) is already served by Ingress (\S+); path left out$/;

/**
 * denialOf prints a denied problem as `namespace/name: field: message`; a path another Ingress
 * serves gets ingress-nginx's wording (`host "…" and path "…" is already defined in ingress ns/name`).
 */
export function denialOf(problem: Problem): string {
  const conflict = CONFLICT.exec(problem.message);
  if (!conflict) return formatProblem(problem);
  const [, host, path, owner] = conflict;
  return formatProblem({ ...problem, message: `host ${host} and path ${path} is already defined in ingress ${owner}` });
}
