import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { fromCallback, type EventObject } from 'xstate';
import type { InformerInput, ResourceWatcherEvent } from '../../machines/resourceWatcher.machine.js';
import type { Logger } from '../log.js';
import { ClusterCache } from '../kube/cache.js';
import { createInformer, type Informer } from '../kube/informer.js';
import type { WatchedKind } from '../kube/kinds.js';

/** WatchScope is what the flags narrow the watch to. */
export interface WatchScope {
  /** `--watch-namespace`, or null for all */
  readonly namespace: string | null;
  /** `--configmap ns/name`: the only ConfigMap watched */
  readonly configMap: string | null;
  /** Secrets named by flags (`--default-ssl-certificate`), which matter without an Ingress naming them */
  readonly flaggedSecrets: readonly string[];
}

const describe = (error: unknown) =>
  error instanceof Error ? error.message : typeof error === 'object' ? JSON.stringify(error) : String(error);

/**
 * watcherActors implements the watchers' `informer` effect. One client-node informer per kind
 * lives as long as the controller, so a restart after a failure resumes from its last
 * resourceVersion (or relists, and deletes what vanished meanwhile) instead of starting blind.
 * Every event updates the ClusterCache; `watch.changed` goes to the machine only for objects
 * that can change nginx.conf (a Secret no Ingress names cannot).
 */
export function watcherActors(kc: KubeConfig, cache: ClusterCache, scope: WatchScope, log: Logger) {
  const informers = new Map<WatchedKind, Informer>();
  const listeners = new Map<WatchedKind, (event: ResourceWatcherEvent) => void>();
  const tell = (kind: WatchedKind, event: ResourceWatcherEvent) => listeners.get(kind)?.(event);

  const matters = (kind: WatchedKind, obj: KubernetesObject): boolean =>
    kind !== 'Secret' || cache.referencesSecret(obj.metadata?.namespace ?? '', obj.metadata?.name ?? '', scope.flaggedSecrets);

  function informerFor(kind: WatchedKind): Informer {
    let informer = informers.get(kind);
    if (informer) return informer;
    const only = kind === 'ConfigMap' ? (scope.configMap ?? 'kube-system/ingress-actors-no-configmap') : undefined;
    informer = createInformer(kc, kind, { namespace: scope.namespace, ...(only ? { only } : {}) }, {
      onSynced: () => tell(kind, { type: 'watch.synced' }),
      onChange: (type, obj) => {
        const changed = type === 'delete' ? cache.remove(kind, obj) : cache.upsert(kind, obj);
        const key = obj.metadata?.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : (obj.metadata?.name ?? '');
        log.debug({ kind, key, type }, 'watch event');
        if (changed && matters(kind, obj)) tell(kind, { type: 'watch.changed', key });
      },
      onError: (error) => tell(kind, { type: 'watch.failed', error: describe(error), jitter: Math.random() }),
    });
    informers.set(kind, informer);
    return informer;
  }

  return {
    informer: fromCallback<EventObject, InformerInput>(({ input, sendBack }) => {
      const kind = input.kind as WatchedKind;
      const informer = informerFor(kind);
      listeners.set(kind, sendBack);
      informer.start().catch((error: unknown) => sendBack({ type: 'watch.failed', error: describe(error), jitter: Math.random() }));
      return () => {
        listeners.delete(kind);
        void informer.stop();
      };
    }),
  };
}
