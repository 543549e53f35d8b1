/**
 * Kubernetes Events (core/v1) for the problems buildModel finds in Ingresses, so that
 * `kubectl describe ingress` says why a rule is not served. One Event lists all the problems of
 * an Ingress at once; it is reported when that set of problems appears, not on every sync. The
 * same set (Ingress, reason, message) always maps to the same Event name, so seeing it again,
 * from this replica or the next leader, counts up one Event instead of adding another. Each
 * Ingress has a token bucket, so a broken Ingress cannot flood the API server. Messages are
 * scrubbed: nothing that looks like key material leaves.
 */
import { createHash } from 'node:crypto';
import type { CoreV1Api, CoreV1Event, V1Ingress } from '@kubernetes/client-node';
import type { Logger } from '../log.js';
import type { Problem } from '../model/nginx-model.js';
import type { ClusterCache } from './cache.js';
import { apiCode, describeApiError } from './leader.js';

/**
 * EventRecorderOptions configure the recorder; the bucket defaults allow 10 Events per Ingress at once, then one per 30
 * s.
 */
export interface EventRecorderOptions {
  readonly core: CoreV1Api;
  readonly cache: ClusterCache;
  readonly log: Logger;
  /** `reportingInstance` and `source.host`: this replica's identity */
  readonly instance: string;
  readonly burst?: number;
  readonly refillMs?: number;
  readonly now?: () => number;
}

/** RecordResult counts what one `record` call did. */
export interface RecordResult {
  readonly created: number;
  readonly counted: number;
  /** new problems not reported because their Ingress's bucket was empty; tried again next time */
  readonly limited: number;
}

/** COMPONENT is the Events' `source.component` and `reportingComponent`. */
export const COMPONENT = 'ingress-actors';

const MAX_MESSAGE = 1024;
const EVENT_TTL_MS = 60 * 60 * 1000;

/**
 * scrubMessage removes PEM blocks and long base64 runs (key material has no business in an Event), control characters,
 * and caps the length.
 */
export function scrubMessage(message: string): string {
  const scrubbed = message
    .replace(/-----BEGIN [A-Z0-9 ]+-----[\s\S]*?(-----END [A-Z0-9 ]+-----|$)/g, '[PEM data removed]')
    .replace(/[A-Za-z0-9+/]{64,}={0,2}/g, '[data removed]')
    .replace(/[\u0000-\u001f\u007f]/g, ' ');
  return scrubbed.length > MAX_MESSAGE ? `${scrubbed.slice(0, MAX_MESSAGE - 1)}…` : scrubbed;
}

/** reasonFor names a problem in UpperCamelCase by the field it is about, as Event reasons are. */
export function reasonFor(problem: Problem): string {
  const { field, message } = problem;
  if (/already (served|set) by Ingress|already has TLS/.test(message)) return 'Conflict';
  if (field.startsWith('spec.tls')) return 'InvalidTLS';
  if (/backend/i.test(field)) return 'InvalidBackend';
  if (field.endsWith('.host')) return 'InvalidHost';
  if (/\.path(Type)?$/.test(field)) return 'InvalidPath';
  if (field.startsWith('metadata.annotations')) return 'InvalidAnnotation';
  return 'InvalidIngress';
}

/**
 * eventName is the Event's name for a problem: the Ingress name and a hash of reason and message, a valid DNS
 * subdomain.
 */
export function eventName(ingressName: string, reason: string, message: string): string {
  const hash = createHash('sha256').update(`${reason}\0${message}`).digest('hex').slice(0, 16);
  return `${ingressName.slice(0, 200)}.${hash}`;
}

/** IngressReport is the one Event an Ingress gets for its problems: its reason and its message. */
export interface IngressReport {
  readonly reason: string;
  readonly message: string;
}

const describeProblem = (problem: Problem) => `${problem.field}: ${problem.message}`;

/**
 * reportFor folds the problems of one Ingress into one Event: a lone problem as `field: message`,
 * several as `N problems: (1) field: message (2) …` in a fixed order (so the same set is the same
 * Event), as many as fit in 1024 characters and then `… and K more`; the reason is theirs when
 * they share one, else InvalidIngress.
 */
export function reportFor(problems: readonly Problem[]): IngressReport {
  const lines = [...new Set(problems.map(describeProblem))].sort();
  const reasons = new Set(problems.map(reasonFor));
  const reason = reasons.size === 1 ? [...reasons][0]! : 'InvalidIngress';
  if (lines.length === 1) return { reason, message: scrubMessage(lines[0]!) };
  // As many as fit in an Event, then how many more: the count is never cut off.
  let message = `${lines.length} problems:`;
  for (const [i, line] of lines.entries()) {
    const next = ` (${i + 1}) ${scrubMessage(line)}`;
    const more = ` … and ${lines.length - i} more`;
    if (message.length + next.length > MAX_MESSAGE - (i === lines.length - 1 ? 0 : 24)) {
      message += more;
      break;
    }
    message += next;
  }
  return { reason, message: scrubMessage(message) };
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * EventRecorder turns the problems of each sync into Events: `record(problems)` creates one per
 * Ingress whose set of problems is new since the last call, and forgets the sets that went away
 * (so they are reported again if they come back).
 */
export class EventRecorder {
  private reported = new Set<string>();
  /** Event name → the count this replica last wrote, and when (forgotten after an hour, when Events expire) */
  private readonly counts = new Map<string, { count: number; at: number }>();
  private readonly buckets = new Map<string, Bucket>();
  private readonly now: () => number;

  constructor(private readonly options: EventRecorderOptions) {
    this.now = options.now ?? Date.now;
  }

  /** record reports the Ingresses whose problems changed; an API failure rejects after what was done so far is kept. */
  async record(problems: readonly Problem[]): Promise<RecordResult> {
    const byIngress = new Map<string, { problems: Problem[]; ingress: V1Ingress }>();
    for (const problem of problems) {
      const object = `${problem.namespace}/${problem.name}`;
      // looked up one by one: a Map of every Ingress on every sync cost more than the problems (10,000 Ingresses)
      const ingress = problem.kind === 'Ingress' ? this.options.cache.get<V1Ingress>('Ingress', object) : undefined;
      if (!ingress) continue;
      const entry = byIngress.get(object) ?? byIngress.set(object, { problems: [], ingress }).get(object)!;
      entry.problems.push(problem);
    }
    // Keyed by Ingress and what its Event says: a changed set of problems is a new report.
    const current = new Map<string, { object: string; report: IngressReport; ingress: V1Ingress }>();
    for (const [object, { problems: its, ingress }] of byIngress) {
      const report = reportFor(its);
      current.set(JSON.stringify([object, report.reason, report.message]), { object, report, ingress });
    }
    this.reported = new Set([...this.reported].filter((key) => current.has(key)));
    this.forgetOld();
    let created = 0;
    let counted = 0;
    let limited = 0;
    for (const [key, { object, report, ingress }] of current) {
      if (this.reported.has(key)) continue;
      if (!this.take(object)) {
        limited++;
        continue;
      }
      if (await this.emit(report, ingress)) created++;
      else counted++;
      this.reported.add(key);
    }
    if (limited > 0) this.options.log.debug({ limited }, 'Events held back by the rate limit');
    return { created, counted, limited };
  }

  /**
   * forgetOld drops counts of Events the API server has expired (1 h by default) and full buckets, so memory follows
   * the problems.
   */
  private forgetOld(): void {
    const now = this.now();
    for (const [name, { at }] of this.counts) if (now - at > EVENT_TTL_MS) this.counts.delete(name);
    const refillMs = this.options.refillMs ?? 30_000;
    const burst = this.options.burst ?? 10;
    for (const [object, bucket] of this.buckets) if (now - bucket.at >= burst * refillMs) this.buckets.delete(object);
  }

  private take(object: string): boolean {
    const burst = this.options.burst ?? 10;
    const refillMs = this.options.refillMs ?? 30_000;
    const now = this.now();
    const bucket = this.buckets.get(object) ?? { tokens: burst, at: now };
    const refilled = Math.floor((now - bucket.at) / refillMs);
    if (refilled > 0) {
      bucket.tokens = Math.min(burst, bucket.tokens + refilled);
      bucket.at += refilled * refillMs;
    }
    if (bucket.tokens >= burst) bucket.at = now;
    this.buckets.set(object, bucket);
    if (bucket.tokens <= 0) return false;
    bucket.tokens--;
    return true;
  }

  /** emit creates the Event, or counts up the existing one of that name; true when it created. */
  private async emit(report: IngressReport, ingress: V1Ingress, again = true): Promise<boolean> {
    const { core } = this.options;
    const namespace = ingress.metadata?.namespace ?? '';
    const { reason, message } = report;
    const name = eventName(ingress.metadata?.name ?? '', reason, message);
    const stamp = new Date(this.now());
    const known = this.counts.get(name)?.count;
    if (known === undefined) {
      try {
        await core.createNamespacedEvent({ namespace, body: this.body(name, ingress, reason, message, stamp) });
        this.counts.set(name, { count: 1, at: stamp.getTime() });
        return true;
      } catch (error) {
        if (apiCode(error) !== 409) throw new Error(`creating Event ${namespace}/${name}: ${describeApiError(error)}`);
      }
    }
    // It exists: written by this replica before (count known), or by another one (read it).
    let count = known;
    if (count === undefined) {
      const existing: CoreV1Event = await core.readNamespacedEvent({ name, namespace });
      count = existing.count ?? 1;
    }
    try {
      await core.patchNamespacedEvent({
        name,
        namespace,
        body: [
          { op: 'replace', path: '/count', value: count + 1 },
          { op: 'replace', path: '/lastTimestamp', value: stamp.toISOString() },
        ],
      });
      this.counts.set(name, { count: count + 1, at: stamp.getTime() });
      return false;
    } catch (error) {
      // Events expire (an hour by default): make it again.
      if (apiCode(error) !== 404 || !again)
        throw new Error(`updating Event ${namespace}/${name}: ${describeApiError(error)}`);
      this.counts.delete(name);
      return this.emit(report, ingress, false);
    }
  }

  private body(name: string, ingress: V1Ingress, reason: string, message: string, stamp: Date): CoreV1Event {
    const meta = ingress.metadata ?? {};
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: meta.namespace ?? '' },
      involvedObject: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        namespace: meta.namespace ?? '',
        name: meta.name ?? '',
        ...(meta.uid ? { uid: meta.uid } : {}),
        ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
      },
      reason,
      message,
      type: 'Warning',
      count: 1,
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      source: { component: COMPONENT, host: this.options.instance },
      reportingComponent: COMPONENT,
      reportingInstance: this.options.instance,
    };
  }
}
