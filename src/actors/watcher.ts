import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { fromCallback, type EventObject } from 'xstate';
import type {
  InformerInput,
  ResourceWatcherEvent,
  UnservedReport,
  WatchFailureReport,
} from '../../machines/resourceWatcher.machine.js';
import type { Logger } from '../log.js';
import type { ClusterCache } from '../kube/cache.js';
import type { ConfigMap } from '../model/snapshot.js';
import { headerConfigMapsNamed } from '../model/global-extras.js';
import { createInformer, DEFAULT_INFORMER_TIMEOUTS, KindNotServedError, type Informer } from '../kube/informer.js';
import type { WatchedKind } from '../kube/kinds.js';

/** WatchScope is what the flags narrow the watch to. */
export interface WatchScope {
  /** `--watch-namespace`, or null for all */
  readonly namespace: string | null;
  /** `--configmap ns/name`: the ConfigMaps of its namespace are watched (it, and the header ConfigMaps it names) */
  readonly configMap: string | null;
  /** `--tcp-services-configmap`, `--udp-services-configmap`: the others watched, each by name */
  readonly streamConfigMaps?: readonly string[];
  /**
   * `--enable-gateway-api`: every ConfigMap in the watched namespaces, since a BackendTLSPolicy names its CA
   * ConfigMaps in any namespace it lives in
   */
  readonly allConfigMaps?: boolean;
}

/** describe says what went wrong with its causes (client-node's "fetch failed" hides "connect ECONNREFUSED …"). */
const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return typeof error === 'object' ? JSON.stringify(error) : String(error);
  const words = [error.message];
  // A few levels at most: a cause chain is short, and a cycle must not hang the log.
  for (let cause = error.cause, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth++)
    if (!words.includes(cause.message)) words.push(cause.message);
  return words.join(': ');
};

/**
 * watcherActors implements the watchers' `informer` effect. Each invocation runs a client-node
 * ListWatch of its own: sharing one across restarts races (the old one's stop aborts the new
 * one's request). A new ListWatch lists from scratch, so when its list is in, whatever the cache
 * still holds of that kind but the list no longer has is removed: nothing deleted while the
 * watcher was down survives. Every event updates the ClusterCache and goes to the machine as
 * `watch.changed`, which reports only the changes of objects the last build read (`secrets.relevant`).
 * A kind the API server does not serve (a CRD not installed, or deleted) is `watch.unserved`, its
 * cached objects removed first.
 */
export function watcherActors(kc: KubeConfig, cache: ClusterCache, scope: WatchScope, log: Logger) {
  const keyOf = (obj: KubernetesObject) =>
    obj.metadata?.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : (obj.metadata?.name ?? '');

  return {
    informer: fromCallback<EventObject, InformerInput>(({ input, sendBack }) => {
      const kind = input.kind as WatchedKind;
      let active = true;
      const seen = new Set<string>();
      const tell = (event: ResourceWatcherEvent) => active && sendBack(event);
      // ConfigMaps: every one in the namespace of --configmap, each services ConfigMap elsewhere by name, and each
      // header ConfigMap the --configmap names elsewhere (add-headers, proxy-set-headers), followed as it changes.
      const configNamespace = scope.configMap?.split('/')[0] ?? null;
      const elsewhere = (scope.streamConfigMaps ?? []).filter((c) => c.split('/')[0] !== configNamespace);
      const targets = [...(configNamespace ? [configNamespace] : []), ...new Set(elsewhere)];
      const onlys: (string | undefined)[] =
        kind !== 'ConfigMap' || scope.allConfigMaps
          ? [undefined]
          : targets.length > 0
            ? targets
            : ['kube-system/ingress-actors-no-configmap'];
      const timeouts = {
        requestTimeoutMs: input.requestTimeoutMs ?? DEFAULT_INFORMER_TIMEOUTS.requestTimeoutMs,
        watchIdleTimeoutMs: input.watchIdleTimeoutMs ?? DEFAULT_INFORMER_TIMEOUTS.watchIdleTimeoutMs,
      };
      const failed = (error: unknown) => {
        if (!(error instanceof KindNotServedError))
          return tell({ type: 'watch.failed', error: describe(error), jitter: Math.random(), at: Date.now() });
        // The kind is gone from the API (its CRD deleted), or never was: nothing of it is left to serve.
        if (!active) return;
        for (const obj of cache.list<KubernetesObject>(kind)) {
          cache.remove(kind, obj);
          tell({ type: 'watch.changed', key: keyOf(obj) });
        }
        tell({ type: 'watch.unserved', error: error.message, at: Date.now() });
      };
      // The first sync waits for every list open before it: the scope's, and header ConfigMaps named by then.
      const listing = new Set<string>();
      let firstSynced = false;
      const listed = (source: string) => {
        listing.delete(source);
        // Whatever the cache holds that no list had is gone, once every list is in.
        if (!active || firstSynced || listing.size > 0) return;
        firstSynced = true;
        for (const obj of cache.list<KubernetesObject>(kind)) {
          if (seen.has(keyOf(obj))) continue;
          cache.remove(kind, obj);
          tell({ type: 'watch.changed', key: keyOf(obj) });
        }
        tell({ type: 'watch.synced' });
      };
      const changed = (type: 'add' | 'update' | 'delete', obj: KubernetesObject) => {
        if (!active) return;
        const key = keyOf(obj);
        if (type === 'delete') seen.delete(key);
        else seen.add(key);
        const moved = type === 'delete' ? cache.remove(kind, obj) : cache.upsert(kind, obj);
        log.debug({ kind, key, type }, 'watch event');
        if (kind === 'ConfigMap' && key === scope.configMap) {
          const refs = type === 'delete' ? [] : headerConfigMapsNamed((obj as ConfigMap).data ?? {}, targets);
          // every ConfigMap is listed already: the header ones need no informer of their own, only to count
          if (scope.allConfigMaps) headerRefs = new Set(refs);
          else follow(refs);
        }
        if (moved && (kind !== 'ConfigMap' || !scope.allConfigMaps || configMapMatters(key)))
          tell({ type: 'watch.changed', key });
      };
      // With every ConfigMap listed, a change syncs only for those a build reads: the --configmap's namespace, the
      // services and header ConfigMaps, and the CA ConfigMaps a BackendTLSPolicy names (a policy's own change syncs,
      // and that build reads the ConfigMap from the cache). Others (leader-election ConfigMaps…) change often.
      let headerRefs = new Set<string>();
      const configMapMatters = (key: string): boolean => {
        const namespace = key.split('/')[0];
        if (namespace === configNamespace || elsewhere.includes(key) || headerRefs.has(key)) return true;
        return cache
          .list<KubernetesObject & { spec?: { validation?: { caCertificateRefs?: unknown } } }>('BackendTLSPolicy')
          .some(
            (p) =>
              p.metadata?.namespace === namespace &&
              Array.isArray(p.spec?.validation?.caCertificateRefs) &&
              p.spec.validation.caCertificateRefs.some(
                (r: unknown) =>
                  typeof r === 'object' && r !== null && `${namespace}/${(r as { name?: unknown }).name}` === key,
              ),
          );
      };
      const open = (source: string, only: string | undefined, onError: (error: unknown) => void) =>
        createInformer(
          kc,
          kind,
          { namespace: scope.namespace, ...(only ? { only } : {}) },
          {
            onSynced: () => listed(source),
            onChange: changed,
            onError,
            onIdle: (idleMs) =>
              active && log.info({ kind, idleMs }, 'the watch received nothing, not even a bookmark; reopening it'),
          },
          timeouts,
        );
      // A header ConfigMap elsewhere: a list or watch refused there (RBAC: a Role in its namespace is needed) is
      // logged and retried on its own; the build says the ConfigMap is missing meanwhile, nothing else stops.
      const followed = new Map<string, { informer: Informer; retry?: NodeJS.Timeout }>();
      const follow = (refs: readonly string[]) => {
        for (const [ref, entry] of followed) {
          if (refs.includes(ref)) continue;
          followed.delete(ref);
          clearTimeout(entry.retry);
          void entry.informer.stop();
          const gone = cache.list<KubernetesObject>(kind).find((o) => keyOf(o) === ref);
          if (gone && cache.remove(kind, gone)) tell({ type: 'watch.changed', key: ref });
          seen.delete(ref);
          listed(`ref:${ref}`);
        }
        for (const ref of refs) {
          if (followed.has(ref)) continue;
          if (!firstSynced) listing.add(`ref:${ref}`);
          const refused = (error: unknown) => {
            if (!active || followed.get(ref) !== entry) return;
            log.warn({ kind, configMap: ref, error: describe(error) }, 'cannot watch a header ConfigMap; retrying');
            // Not the first sync's to wait for: it goes on, the ConfigMap missing, until this list is in.
            listed(`ref:${ref}`);
            clearTimeout(entry.retry);
            entry.retry = setTimeout(() => void entry.informer.start().catch(refused), 10_000);
          };
          const entry: { informer: Informer; retry?: NodeJS.Timeout } = { informer: open(`ref:${ref}`, ref, refused) };
          followed.set(ref, entry);
          void entry.informer.start().catch(refused);
        }
      };
      const informers: Informer[] = onlys.map((only, i) => {
        listing.add(`scope:${i}`);
        return open(`scope:${i}`, only, failed);
      });
      for (const informer of informers) informer.start().catch(failed);
      return () => {
        active = false;
        for (const informer of informers) void informer.stop();
        for (const { informer, retry } of followed.values()) clearTimeout(retry), void informer.stop();
      };
    }),
  };
}

/**
 * watcherLogActions implements the watchers' `reportFailed`, `reportRecovered`, `reportUnserved` and
 * `reportServed`: every failure at warn with its error and when the next try comes (after the first
 * sync the controller goes on serving what it last saw, which may be going stale), the recovery at
 * info, and a kind the API server does not serve (or serves again) at info, once.
 */
export function watcherLogActions(log: Logger) {
  return {
    reportFailed: (_: unknown, { kind, error, failures, retryInMs, afterFirstSync, staleSince }: WatchFailureReport) =>
      log.warn(
        {
          kind,
          error,
          failures,
          retryInMs,
          retryAt: new Date(Date.now() + retryInMs).toISOString(),
          ...(afterFirstSync && staleSince !== null ? { staleSince: new Date(staleSince).toISOString() } : {}),
        },
        afterFirstSync
          ? 'watch failed; serving what was last seen of this kind until it lists again'
          : 'cannot list from the API server (before the first sync); retrying',
      ),
    reportRecovered: (_: unknown, { kind, staleSince }: { kind: string; staleSince: number | null }) =>
      log.info({ kind, ...(staleSince !== null ? { staleForMs: Date.now() - staleSince } : {}) }, 'watching again'),
    reportUnserved: (_: unknown, { kind, error, recheckInMs }: UnservedReport) =>
      log.info(
        { kind, error, recheckInMs },
        'the API server does not serve this kind (its CRD is not installed?); nothing of it is served, and it is ' +
          'listed again now and then',
      ),
    reportServed: (_: unknown, { kind, unservedSince }: { kind: string; unservedSince: number | null }) =>
      log.info(
        { kind, ...(unservedSince !== null ? { unservedForMs: Date.now() - unservedSince } : {}) },
        'the API server serves this kind now; watching it',
      ),
  };
}
