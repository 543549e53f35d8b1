/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it
 * (client-node has no helper): one Lease named by `--election-id`, held by the replica whose
 * identity is its `holderIdentity`, renewed every retry period, free for the taking once
 * `leaseDurationSeconds` have passed without a renewal. Writes carry the resourceVersion they
 * read, so when two replicas race the API server answers one of them 409: that one lost.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { ApiException, V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import type { LeaseResult } from '../../machines/status.machine.js';

/** ElectionTimings are the three durations of an election, in milliseconds. */
export interface ElectionTimings {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/**
 * electionTimings derives the renew deadline and retry period from `--election-ttl` in the
 * proportions kube-controller-manager uses (15 s, 10 s, 2 s): a leader that cannot renew for
 * two thirds of the TTL steps down before anyone may take over, and a follower looks every
 * TTL / 7.5, so a dead leader is replaced at most TTL + TTL / 7.5 after its last renewal.
 */
export function electionTimings(ttlMs: number): ElectionTimings {
  return {
    leaseDurationMs: ttlMs,
    renewDeadlineMs: Math.round((ttlMs * 2) / 3),
    retryPeriodMs: Math.max(50, Math.round(ttlMs / 7.5)),
  };
}

/**
 * defaultIdentity is POD_NAME when set, else host name plus a random suffix (unique per process, as client-go
 * recommends).
 */
export function defaultIdentity(env: NodeJS.ProcessEnv): string {
  return env.POD_NAME || `${hostname()}_${randomBytes(4).toString('hex')}`;
}

/** apiCode is the HTTP status of a failed client-node call, or undefined for other errors (network, TLS). */
export function apiCode(error: unknown): number | undefined {
  return error instanceof ApiException ? (error as ApiException<unknown>).code : undefined;
}

/** describeApiError shortens a client-node error to `409 Conflict: <the Status message>` for logs and state. */
export function describeApiError(error: unknown): string {
  if (error instanceof ApiException) {
    const e = error as ApiException<unknown>;
    let body: { message?: string; reason?: string } = {};
    try {
      body = (typeof e.body === 'string' ? JSON.parse(e.body) : (e.body ?? {})) as typeof body;
    } catch {
      /* not JSON */
    }
    return `${e.code} ${body.reason ?? ''}: ${body.message ?? String(e.body).slice(0, 200)}`.replace(/ :/, ':');
  }
  return error instanceof Error ? error.message : String(error);
}

/** LeaseElectorOptions say which Lease to contend for, as whom, and for how long a hold lasts. */
export interface LeaseElectorOptions {
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  /** the clock; Date.now unless a test drives it */
  readonly now?: () => number;
}

const specKey = (lease: V1Lease): string => {
  const s = lease.spec ?? {};
  return JSON.stringify([
    s.holderIdentity ?? '',
    String(s.renewTime ?? ''),
    s.leaseTransitions ?? 0,
    lease.metadata?.resourceVersion ?? '',
  ]);
};

/**
 * LeaseElector tries to acquire or renew one Lease, and releases it. It judges expiry by its
 * own clock: a holder's Lease runs out leaseDurationSeconds after this replica first saw its
 * latest renewal, never by the renewTime written by another node's clock (client-go's
 * observedTime), so clock skew between nodes cannot make two leaders.
 */
export class LeaseElector {
  private observed: { key: string; at: number } | null = null;
  private holding = false;
  private readonly now: () => number;
  /** the last call's settling: calls run one at a time */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly api: CoordinationV1Api,
    private readonly options: LeaseElectorOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** identity is who this replica is in the Lease's holderIdentity. */
  get identity(): string {
    return this.options.identity;
  }

  /** isLeader says whether the last acquire or renew succeeded (and nothing released it since). */
  get isLeader(): boolean {
    return this.holding;
  }

  /**
   * tryAcquireOrRenew gets the Lease, and takes it (or renews it) when it is ours, free or
   * expired; creates it when missing. A 409 on create or update means another replica wrote
   * first: not leader. Other API errors reject (the machine retries; a leader keeps leading
   * until its renew deadline).
   */
  tryAcquireOrRenew(): Promise<LeaseResult> {
    return this.serially(() => this.acquireOrRenew());
  }

  /**
   * release gives the Lease up if this replica holds it, so a follower takes over at its next
   * try instead of after the TTL: holder cleared, duration 1 s (as client-go's ReleaseOnCancel).
   * It waits for a renewal still in flight (its actor was stopped, its request was not): run
   * side by side, that renewal could read the released Lease and take it again for a whole TTL.
   * True when it released something.
   */
  release(): Promise<boolean> {
    return this.serially(() => this.releaseHeld());
  }

  private serially<T>(run: () => Promise<T>): Promise<T> {
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async acquireOrRenew(): Promise<LeaseResult> {
    const { namespace, name, identity } = this.options;
    const now = this.now();
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (apiCode(error) !== 404) throw error;
      try {
        const created = await this.api.createNamespacedLease({ namespace, body: this.body(undefined, now) });
        return this.won(created, now);
      } catch (createError) {
        if (apiCode(createError) === 409) return this.lost(null, 0);
        throw createError;
      }
    }
    const key = specKey(lease);
    if (this.observed?.key !== key) this.observed = { key, at: now };
    const holder = lease.spec?.holderIdentity || null;
    if (holder !== null && holder !== identity) {
      const durationMs = (lease.spec?.leaseDurationSeconds ?? Math.ceil(this.options.leaseDurationMs / 1000)) * 1000;
      const expiresInMs = this.observed.at + durationMs - now;
      if (expiresInMs > 0) return this.lost(holder, expiresInMs);
    }
    try {
      const updated = await this.api.replaceNamespacedLease({ name, namespace, body: this.body(lease, now) });
      return this.won(updated, now);
    } catch (error) {
      if (apiCode(error) === 409) return this.lost(holder, 0);
      throw error;
    }
  }

  private async releaseHeld(): Promise<boolean> {
    if (!this.holding) return false;
    this.holding = false;
    const { namespace, name, identity } = this.options;
    const lease = await this.api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== identity) return false;
    const now = new V1MicroTime(this.now());
    const spec = {
      leaseDurationSeconds: 1,
      leaseTransitions: lease.spec.leaseTransitions ?? 0,
      acquireTime: now,
      renewTime: now,
    };
    await this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec } });
    return true;
  }

  private body(current: V1Lease | undefined, now: number): V1Lease {
    const { namespace, name, identity, leaseDurationMs } = this.options;
    const spec = current?.spec ?? {};
    const renewing = spec.holderIdentity === identity;
    const stamp = new V1MicroTime(now);
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: current?.metadata ?? { name, namespace },
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds: Math.max(1, Math.ceil(leaseDurationMs / 1000)),
        acquireTime: renewing && spec.acquireTime ? spec.acquireTime : stamp,
        renewTime: stamp,
        leaseTransitions:
          current === undefined ? 0 : renewing ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
  }

  private won(lease: V1Lease, now: number): LeaseResult {
    this.observed = { key: specKey(lease), at: now };
    this.holding = true;
    return { leader: true, holder: this.options.identity, expiresInMs: null };
  }

  private lost(holder: string | null, expiresInMs: number): LeaseResult {
    this.holding = false;
    return { leader: false, holder, expiresInMs };
  }
}
