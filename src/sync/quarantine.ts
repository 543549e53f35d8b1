/**
 * Quarantine: one tenant's Ingress that nginx refuses costs that tenant only. When `nginx -t`
 * refuses a config, the Ingresses its refusal points at (src/sync/blame.ts) are left out of the
 * next builds, with a problem, until they change; everyone else's config is applied. When the
 * refusal points nowhere in particular, the suspects (the Ingresses changed since the last applied
 * config) are bisected: half of them is built in, the rest held back, and nginx's verdict on that
 * config halves the suspects again, one sync per step, until one is left.
 *
 * Pure bookkeeping: snapshots, texts and nginx's verdicts in, a snapshot and problems out.
 */
import type { Blame } from './blame.js';
import type { NginxModel, Problem } from '../model/nginx-model.js';
import type { Ingress, Secret, Snapshot } from '../model/snapshot.js';

/** Handed is a config the sync handed to nginx: its text, its model, and the Ingresses built into it. */
export interface Handed {
  readonly text: string;
  readonly model: NginxModel;
  /** the snapshot's Ingresses that were built in (arrays of the snapshot, not copies) */
  readonly ingresses: readonly Ingress[];
  readonly secrets: readonly Secret[];
}

/** Verdicts are what nginx said since the last sync: the config it serves now, and the last it refused. */
export interface Verdicts {
  readonly applied: string | null;
  readonly refused: { readonly config: string; readonly output: string } | null;
}

/** Blamer says where a refusal points (blame() of src/sync/blame.ts, given to keep this module pure of rendering). */
export type Blamer = (output: string, handed: Handed) => Blame | null;

interface Held {
  /** the object left out: a changed Ingress (a new object in the cache) is tried again */
  readonly ingress: Ingress;
  /** its namespace's Secrets when it was left out: a renewed Secret (its certificate, say) tries it again */
  readonly secrets: readonly Secret[];
  readonly field: string;
  readonly reason: string;
  /** found by bisection rather than named by nginx's refusal */
  readonly bisected: boolean;
  /**
   * `unconfirmed` until a config without it was applied; then `retrying` (built in once more, as a
   * refusal can have had a passing cause: a disk that was full, a fault of nginx -t itself) until
   * nginx's verdict: refused again, `confirmed` (left out until it changes); applied, let go
   */
  readonly state: 'unconfirmed' | 'retrying' | 'confirmed';
}

interface Trial {
  readonly reason: string;
  /** the Ingresses one of which nginx refuses */
  readonly suspects: readonly string[];
  /** the half built in this step; the other suspects are held back */
  readonly testing: readonly string[];
  /** the config handed for this step, once handed */
  text: string | null;
}

const keyOf = (ingress: Ingress) => `${ingress.metadata?.namespace ?? ''}/${ingress.metadata?.name ?? ''}`;
const HISTORY = 4;

/** Quarantine keeps the Ingresses nginx refused out of the config, and narrows down whom a refusal means. */
export class Quarantine {
  private readonly held = new Map<string, Held>();
  private trial: Trial | null = null;
  private handed: Handed[] = [];
  private applied: Handed | null = null;
  /** the reason and the Ingresses bisection last left out: if nginx refuses the same without them, they were not it */
  private lastBisected: { reason: string; keys: readonly string[] } | null = null;
  /** the latest refusal nobody could be blamed for (the ConfigMap, the template), for the log */
  unblamed: string | null = null;

  constructor(private readonly blamer: Blamer) {}

  /**
   * awaitingVerdict says whether the next step waits for nginx's verdict on the config just
   * handed (a step of bisection, or a held Ingress's retry): the verdict, not a change, brings it.
   */
  get awaitingVerdict(): boolean {
    return this.trial !== null || [...this.held.values()].some((h) => h.state !== 'confirmed');
  }

  /** heldKeys are the Ingresses left out now, for logs and tests. */
  heldKeys(): string[] {
    return [...this.held.keys()].sort();
  }

  /** judge takes nginx's verdicts on the configs handed so far. */
  judge(verdicts: Verdicts): void {
    if (verdicts.applied !== null) {
      // the latest config of that text: with routes as data, configs built without a shared host's Ingress (held,
      // or a step of bisection) can have one text, and the verdict is on the latest
      const applied = this.handed.findLast((h) => h.text === verdicts.applied);
      if (applied) this.applied = applied;
      if (this.trial && this.trial.text === verdicts.applied) {
        // That half built in is innocent: the culprit is among the ones held back.
        const testing = new Set(this.trial.testing);
        this.narrow(
          this.trial.suspects.filter((k) => !testing.has(k)),
          this.trial.reason,
        );
      } else if (!this.trial && applied && applied === this.handed.at(-1)) this.retryHeld();
      if (applied) this.lastBisected = null;
    }
    const refused = verdicts.refused;
    // Only nginx's word on the latest config counts: an older one's has been acted on, or is moot.
    const latest = this.handed.at(-1);
    if (refused === null || latest === undefined || refused.config !== latest.text) return;
    // nginx -t that could not judge (killed, timed out, no room to run) blames no one: the nginx actor retries it.
    if (!refused.output.includes('[emerg]')) return;
    if (this.trial) {
      if (this.trial.text === refused.config) this.narrow(this.trial.testing, this.trial.reason);
      return;
    }
    const reason = refusalReason(refused.output);
    if (this.lastBisected && this.lastBisected.reason === reason) {
      // Refused for the same reason without the ones bisection found: it was not them.
      for (const key of this.lastBisected.keys) this.held.delete(key);
      this.lastBisected = null;
      this.unblamed = reason;
      return;
    }
    const blamed = this.blamer(refused.output, latest);
    const built = new Map(latest.ingresses.map((i) => [keyOf(i), i]));
    if (blamed) {
      const named = blamed.ingresses.filter((k) => built.has(k));
      if (named.length === 1) {
        this.hold(named[0] ?? '', built, blamed.field, reason, false);
        return;
      }
      if (named.length > 1) {
        this.startTrial(named, reason);
        return;
      }
    }
    // No place, or nobody's: the suspects are what changed since nginx last took a config.
    const before = this.applied === null ? null : new Map(this.applied.ingresses.map((i) => [keyOf(i), i]));
    const changed = [...built].filter(([key, ingress]) => before?.get(key) !== ingress).map(([key]) => key);
    if (changed.length === 0 || before === null) {
      this.unblamed = reason;
      return;
    }
    if (changed.length === 1) this.hold(changed[0] ?? '', built, 'spec', reason, true);
    else this.startTrial(changed.sort(), reason);
  }

  /**
   * prepare takes out of a snapshot the Ingresses held (those that changed since are let back in)
   * and, while bisecting, the suspects this step holds back; each left out gets a problem.
   */
  prepare(snapshot: Snapshot): { snapshot: Snapshot; problems: Problem[] } {
    if (this.held.size === 0 && this.trial === null) return { snapshot, problems: [] };
    const current = new Map(snapshot.ingresses.map((i) => [keyOf(i), i]));
    for (const [key, held] of this.held) {
      const namespace = held.ingress.metadata?.namespace ?? '';
      if (current.get(key) !== held.ingress || !sameObjects(held.secrets, secretsIn(snapshot.secrets, namespace)))
        this.held.delete(key);
    }
    const testing = new Set(this.trial?.testing ?? []);
    const heldBack = (this.trial?.suspects ?? []).filter((k) => !testing.has(k) && !this.held.has(k));
    if (heldBack.length === 0 && [...this.held.values()].every((h) => h.state === 'retrying'))
      return { snapshot, problems: [] };
    const problems: Problem[] = [];
    for (const [key, held] of this.held) {
      if (held.state === 'retrying') continue;
      problems.push(
        problemFor(
          key,
          held.field,
          `nginx refused the config with this Ingress in it (${held.reason}); it is left out until it or a Secret in ` +
            'its namespace changes',
        ),
      );
    }
    for (const key of heldBack) {
      problems.push(
        problemFor(
          key,
          'spec',
          `held back while the controller finds which Ingress nginx refuses (${this.trial?.reason ?? ''})`,
        ),
      );
    }
    const out = new Set([...[...this.held].filter(([, h]) => h.state !== 'retrying').map(([key]) => key), ...heldBack]);
    return { snapshot: { ...snapshot, ingresses: snapshot.ingresses.filter((i) => !out.has(keyOf(i))) }, problems };
  }

  /** handedOver records a config handed to nginx, so that its verdict can be read. */
  handedOver(handed: Handed): void {
    this.handed.push(handed);
    if (this.handed.length > HISTORY) this.handed.shift();
    if (this.trial && this.trial.text === null) this.trial.text = handed.text;
  }

  /**
   * retryHeld follows a config nginx took: the Ingresses it was built without are built in once
   * more, and those that were built in again (their retry) and taken are let go.
   */
  private retryHeld(): void {
    for (const [key, held] of this.held) {
      if (held.state === 'retrying') this.held.delete(key);
      else if (held.state === 'unconfirmed') this.held.set(key, { ...held, state: 'retrying' });
    }
  }

  private startTrial(suspects: readonly string[], reason: string): void {
    this.trial = { reason, suspects, testing: suspects.slice(0, Math.ceil(suspects.length / 2)), text: null };
  }

  private narrow(suspects: readonly string[], reason: string): void {
    this.trial = null;
    if (suspects.length === 1) {
      const latest = new Map((this.handed.at(-1)?.ingresses ?? []).map((i) => [keyOf(i), i]));
      const known = this.held.get(suspects[0] ?? '')?.ingress;
      const ingress = latest.get(suspects[0] ?? '') ?? known;
      if (ingress) this.hold(suspects[0] ?? '', new Map([[suspects[0] ?? '', ingress]]), 'spec', reason, true);
    } else if (suspects.length > 1) this.startTrial(suspects, reason);
  }

  private hold(
    key: string,
    built: ReadonlyMap<string, Ingress>,
    field: string,
    reason: string,
    bisected: boolean,
  ): void {
    const ingress = built.get(key);
    if (!ingress) return;
    const secrets = secretsIn(this.handed.at(-1)?.secrets ?? [], ingress.metadata?.namespace ?? '');
    // Refused again on its retry: it was this Ingress, not a passing cause.
    const state = this.held.get(key)?.state === 'retrying' ? 'confirmed' : 'unconfirmed';
    this.held.set(key, { ingress, secrets, field, reason, bisected, state });
    if (bisected) this.lastBisected = { reason, keys: [key] };
  }
}

function secretsIn(secrets: readonly Secret[], namespace: string): Secret[] {
  return secrets.filter((s) => s.metadata?.namespace === namespace);
}

function sameObjects(a: readonly object[], b: readonly object[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function problemFor(key: string, field: string, message: string): Problem {
  const [namespace = '', name = ''] = key.split('/');
  return { kind: 'Ingress', namespace, name, field, message };
}

/** refusalReason is nginx's own reason: its first `[emerg]` line without time stamp and pid. */
export function refusalReason(output: string): string {
  const line =
    output.split('\n').find((l) => l.includes('[emerg]')) ??
    output.split('\n').find((l) => l.trim() !== '') ??
    'refused';
  const at = line.indexOf('[emerg]');
  return (at >= 0 ? line.slice(at + 7) : line)
    .replace(/^\s*\d{1,10}#\d{1,10}:\s*/, '')
    .trim()
    .slice(0, 500);
}
