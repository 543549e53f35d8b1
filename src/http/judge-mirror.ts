/**
 * The admission judge's mirror of the controller's cache (src/http/judge-worker.ts keeps one): the main thread sends
 * what changed in each list since its last message (src/http/worker-judge.ts), the worker applies it.
 */
import type { KubeObject, Snapshot } from '../model/snapshot.js';

/** SnapshotField is a list of the Snapshot, mirrored in the worker. */
export type SnapshotField = keyof Snapshot;

/** FieldChange is what changed in one list since the last message: objects added or replaced, keys removed. */
export interface FieldChange {
  readonly field: SnapshotField;
  readonly upserts: readonly KubeObject[];
  readonly removes: readonly string[];
}

/** ToWorker is a message to the worker: changes to the mirror, a warm-up, or a review to judge (its `id` answers). */
export type ToWorker =
  | { readonly type: 'objects'; readonly changes: readonly FieldChange[] }
  | { readonly type: 'warm' }
  | { readonly type: 'review'; readonly id: number; readonly body: Uint8Array };

/** objectKey is `namespace/name`, as the ClusterCache keys objects. */
export const objectKey = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** Mirror holds the objects the worker was sent, and hands out a Snapshot whose unchanged lists keep their identity. */
export class Mirror {
  private readonly objects = new Map<SnapshotField, Map<string, KubeObject>>();
  private readonly lists = new Map<SnapshotField, readonly KubeObject[]>();
  private last: Snapshot | null = null;

  apply(changes: readonly FieldChange[]): void {
    for (const { field, upserts, removes } of changes) {
      let byKey = this.objects.get(field);
      if (!byKey) this.objects.set(field, (byKey = new Map()));
      for (const key of removes) byKey.delete(key);
      for (const o of upserts) byKey.set(objectKey(o), o);
      this.lists.delete(field);
      this.last = null;
    }
  }

  snapshot(): Snapshot {
    if (this.last) return this.last;
    const list = (field: SnapshotField) => {
      let l = this.lists.get(field);
      if (!l) this.lists.set(field, (l = Object.freeze([...(this.objects.get(field)?.values() ?? [])])));
      return l as never;
    };
    this.last = {
      ingresses: list('ingresses'),
      ingressClasses: list('ingressClasses'),
      services: list('services'),
      endpointSlices: list('endpointSlices'),
      secrets: list('secrets'),
      configMaps: list('configMaps'),
      gatewayClasses: list('gatewayClasses'),
      gateways: list('gateways'),
      httpRoutes: list('httpRoutes'),
      grpcRoutes: list('grpcRoutes'),
      referenceGrants: list('referenceGrants'),
      backendTLSPolicies: list('backendTLSPolicies'),
      namespaces: list('namespaces'),
    };
    return this.last;
  }
}

/** SNAPSHOT_FIELDS are the lists of a Snapshot, each mirrored. */
export const SNAPSHOT_FIELDS: readonly SnapshotField[] = [
  'ingresses',
  'ingressClasses',
  'services',
  'endpointSlices',
  'secrets',
  'configMaps',
  'gatewayClasses',
  'gateways',
  'httpRoutes',
  'grpcRoutes',
  'referenceGrants',
  'backendTLSPolicies',
  'namespaces',
];

/**
 * changesSince is what changed in `snapshot` since the lists in `sent` (by object identity, as the ClusterCache keeps an
 * unchanged object and an unchanged list), and records the new lists there. A list that is the one sent costs nothing;
 * one that changed costs a pass over it, and only its changed objects are copied to the worker.
 */
export function changesSince(sent: Map<SnapshotField, readonly KubeObject[]>, snapshot: Snapshot): FieldChange[] {
  const changes: FieldChange[] = [];
  for (const field of SNAPSHOT_FIELDS) {
    const now = (snapshot[field] ?? []) as readonly KubeObject[];
    const before = sent.get(field);
    if (now === before) continue;
    const was = new Map((before ?? []).map((o) => [objectKey(o), o]));
    const upserts: KubeObject[] = [];
    for (const o of now) {
      const key = objectKey(o);
      if (was.get(key) !== o) upserts.push(o);
      was.delete(key);
    }
    const removes = [...was.keys()];
    if (upserts.length > 0 || removes.length > 0) changes.push({ field, upserts, removes });
    sent.set(field, now);
  }
  return changes;
}
