import { KubernetesObjectApi, ListWatch, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { KIND_INFO, apiPath, type WatchedKind } from './kinds.js';

/** InformerEvents are what an informer reports: the first list is in, an object changed, it failed. */
export interface InformerEvents {
  readonly onSynced: () => void;
  readonly onChange: (type: 'add' | 'update' | 'delete', obj: KubernetesObject) => void;
  /** the informer has stopped; start() again (after a backoff) relists or resumes the watch */
  readonly onError: (error: unknown) => void;
}

/** InformerScope narrows what a kind's informer lists and watches. */
export interface InformerScope {
  readonly namespace: string | null;
  /** for the ConfigMap kind: only this `ns/name` (the --configmap) */
  readonly only?: string;
}

/** Informer is one kind's list-watch: a client-node ListWatch that can be started again after it fails. */
export interface Informer {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * createInformer wraps client-node's ListWatch for one kind. It relists by itself on 410 Gone
 * and resumes a dropped watch from the last resourceVersion; on any other error it stops and
 * reports, and the watcher actor decides when to start it again.
 */
export function createInformer(kc: KubeConfig, kind: WatchedKind, scope: InformerScope, events: InformerEvents): Informer {
  const info = KIND_INFO[kind];
  const apiVersion = info.group ? `${info.group}/${info.version}` : info.version;
  const [onlyNamespace, onlyName] = scope.only?.split('/') ?? [];
  const namespace = onlyNamespace ?? scope.namespace;
  const fieldSelector = onlyName ? `metadata.name=${onlyName}` : undefined;
  const objects = kc.makeApiClient(KubernetesObjectApi);
  const list = () =>
    objects.list(apiVersion, kind, info.namespaced ? (namespace ?? undefined) : undefined, undefined, undefined, undefined, fieldSelector);
  const listWatch = new ListWatch<KubernetesObject>(apiPath(kind, info.namespaced ? namespace : null), new Watch(kc), list, false, undefined, fieldSelector);
  listWatch.on('add', (obj) => events.onChange('add', obj));
  listWatch.on('update', (obj) => events.onChange('update', obj));
  listWatch.on('delete', (obj) => events.onChange('delete', obj));
  let failedSinceStart = false;
  listWatch.on('error', (error) => {
    failedSinceStart = true;
    events.onError(error);
  });
  return {
    async start() {
      // start() resolves once the list is in and the watch is open, or once the list failed
      // (reported through 'error', not by rejecting).
      failedSinceStart = false;
      await listWatch.start();
      if (!failedSinceStart) events.onSynced();
    },
    stop: () => listWatch.stop(),
  };
}
