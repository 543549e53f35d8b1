import {
  createConfiguration,
  KubernetesObjectApi,
  ListWatch,
  ServerConfiguration,
  Watch,
  type KubeConfig,
  type KubernetesObject,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { KIND_INFO, apiPath, type WatchedKind } from './kinds.js';
import { apiCode, describeApiError } from './leader.js';

/**
 * KindNotServedError: the API server does not serve the kind (its group/version answers 404, or its discovery does
 * not list the kind): a CRD not installed. Not a failure to back off from, but a state to wait in.
 */
export class KindNotServedError extends Error {
  constructor(
    readonly kind: string,
    detail: string,
  ) {
    super(`the API server does not serve ${kind} (${detail})`);
    this.name = 'KindNotServedError';
  }
}

/** notServed tells a list's "no such kind" (404 from discovery or the list, or a kind discovery lacks) from the rest. */
function notServed(kind: string, apiVersion: string, error: unknown): KindNotServedError | null {
  if (apiCode(error) === 404) return new KindNotServedError(kind, `${apiVersion}: ${describeApiError(error)}`);
  // client-node's KubernetesObjectApi when the group/version is served but the kind is not in it.
  if (error instanceof Error && error.message.startsWith('Unrecognized API version and kind'))
    return new KindNotServedError(kind, `${apiVersion} does not list it`);
  return null;
}

/** InformerEvents are what an informer reports: the first list is in, an object changed, it failed. */
export interface InformerEvents {
  readonly onSynced: () => void;
  readonly onChange: (type: 'add' | 'update' | 'delete', obj: KubernetesObject) => void;
  /** the informer has stopped; start() again (after a backoff) relists or resumes the watch */
  readonly onError: (error: unknown) => void;
  /** an open watch received nothing, not even a bookmark, for `watchIdleTimeoutMs`: it is being reopened */
  readonly onIdle?: (idleMs: number) => void;
}

/** InformerScope narrows what a kind's informer lists and watches. */
export interface InformerScope {
  readonly namespace: string | null;
  /** for the ConfigMap kind: only this `ns/name`, or only the namespace `ns` (that of --configmap) */
  readonly only?: string;
}

/**
 * InformerTimeouts bound what an API server that stops answering can do to a watcher: without
 * them a list that hangs hangs for ever, and a watch whose connection goes silent looks open.
 */
export interface InformerTimeouts {
  /** a list, or a watch request's answer (its response headers), that takes longer fails */
  readonly requestTimeoutMs: number;
  /** an open watch that receives nothing, not even a bookmark, for longer is reopened from its resourceVersion */
  readonly watchIdleTimeoutMs: number;
}

/**
 * DEFAULT_INFORMER_TIMEOUTS: 30 s for an answer; 90 s of silence on a watch, which asks for
 * bookmarks (kube-apiserver sends one about every minute, so a healthy quiet watch never idles out).
 */
export const DEFAULT_INFORMER_TIMEOUTS: InformerTimeouts = { requestTimeoutMs: 30_000, watchIdleTimeoutMs: 90_000 };

/** Informer is one kind's list-watch: a client-node ListWatch that can be started again after it fails. */
export interface Informer {
  start(): Promise<void>;
  stop(): Promise<void>;
}

type WatchCallback = (phase: string, apiObj: unknown, watchObj?: unknown) => void;
type WatchDone = (err: unknown) => void;

const isTimeout = (error: unknown) => (error as { name?: string } | null)?.name === 'TimeoutError';

/**
 * GuardedWatch is client-node's Watch, as ListWatch calls it, with a deadline on the answer.
 * client-node's own timer (set to the idle timeout) covers the open stream: when it fires, its
 * TimeoutError makes ListWatch reopen the watch from its resourceVersion at once, which is right
 * for a connection gone silent. But a server that never answers the request would be retried
 * the same way, silently, for ever: so an unanswered watch fails with an error of its own, which
 * ListWatch reports, and the watcher backs off, logs and shows it.
 */
class GuardedWatch {
  constructor(
    private readonly kc: KubeConfig,
    private readonly timeouts: InformerTimeouts,
    private readonly onIdle: (idleMs: number) => void,
  ) {}

  async watch(
    path: string,
    queryParams: Record<string, unknown>,
    callback: WatchCallback,
    done: WatchDone,
  ): Promise<AbortController> {
    const inner = new Watch(this.kc);
    // Declared private in client-node's types, but the knob its Watch reads on every (re)arm of
    // its timer; test/kube/watchers.test.ts checks that a silent watch is reopened on time.
    (inner as unknown as { requestTimeoutMs: number }).requestTimeoutMs = this.timeouts.watchIdleTimeoutMs;
    const outer = new AbortController();
    const { requestTimeoutMs, watchIdleTimeoutMs } = this.timeouts;
    let answered = false;
    let finished = false;
    const unanswered = () => new Error(`watch ${path}: the API server did not answer within ${requestTimeoutMs} ms`);
    const finish = (error: unknown) => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      if (isTimeout(error) && !answered) return done(unanswered());
      if (isTimeout(error)) this.onIdle(watchIdleTimeoutMs);
      done(error);
    };
    const deadline = setTimeout(() => {
      finish(unanswered());
      outer.abort();
    }, requestTimeoutMs);
    // Like client-node's own timer: a pending deadline must not keep a stopping process alive.
    deadline.unref();
    const opened = inner
      .watch(
        path,
        { ...queryParams, allowWatchBookmarks: true },
        (phase, obj, raw) => void (finished || callback(phase, obj, raw)),
        finish,
      )
      .then(
        (request) => {
          if (!finished) {
            answered = true;
            clearTimeout(deadline);
          }
          if (outer.signal.aborted) request.abort();
          else outer.signal.addEventListener('abort', () => request.abort(), { once: true });
        },
        (error: unknown) => finish(error),
      );
    await Promise.race([
      opened,
      new Promise((resolve) => outer.signal.addEventListener('abort', resolve, { once: true })),
    ]);
    return outer;
  }
}

/**
 * createInformer wraps client-node's ListWatch for one kind. It relists by itself on 410 Gone
 * and resumes a dropped watch from the last resourceVersion; on any other error (a list or a
 * watch the API server did not answer in time included) it stops and reports, and the watcher
 * actor decides when to start it again. A CRD kind the API server does not serve fails its list with
 * a KindNotServedError.
 */
export function createInformer(
  kc: KubeConfig,
  kind: WatchedKind,
  scope: InformerScope,
  events: InformerEvents,
  timeouts: InformerTimeouts = DEFAULT_INFORMER_TIMEOUTS,
): Informer {
  const info = KIND_INFO[kind];
  const apiVersion = info.group ? `${info.group}/${info.version}` : info.version;
  const [onlyNamespace, onlyName] = scope.only?.split('/') ?? [];
  const namespace = onlyNamespace ?? scope.namespace;
  const fieldSelector = onlyName ? `metadata.name=${onlyName}` : undefined;
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the kubeconfig has no current cluster');
  // Each list (and the discovery request it may make first) carries the signal of its attempt.
  let listing: AbortController | null = null;
  const objects = new KubernetesObjectApi(
    createConfiguration({
      baseServer: new ServerConfiguration(server, {}),
      authMethods: { default: kc },
      promiseMiddleware: [
        {
          pre: async (context: RequestContext) => {
            if (listing) context.setSignal(listing.signal);
            return context;
          },
          post: async (response: ResponseContext) => response,
        },
      ],
    }),
  );
  const list = async () => {
    const attempt = new AbortController();
    listing = attempt;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      attempt.abort();
    }, timeouts.requestTimeoutMs);
    timer.unref();
    try {
      return await objects.list(
        apiVersion,
        kind,
        info.namespaced ? (namespace ?? undefined) : undefined,
        undefined,
        undefined,
        undefined,
        fieldSelector,
      );
    } catch (error) {
      if (timedOut)
        throw new Error(`list ${kind}: the API server did not answer within ${timeouts.requestTimeoutMs} ms`);
      throw (info.crd && notServed(kind, apiVersion, error)) || error;
    } finally {
      clearTimeout(timer);
      if (listing === attempt) listing = null;
    }
  };
  const watch = new GuardedWatch(kc, timeouts, (idleMs) => events.onIdle?.(idleMs));
  const listWatch = new ListWatch<KubernetesObject>(
    apiPath(kind, info.namespaced ? namespace : null),
    watch as unknown as Watch,
    list,
    false,
    undefined,
    fieldSelector,
  );
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
      // start() resolves once the list is in and the watch is open, or once either failed
      // (reported through 'error', not by rejecting).
      failedSinceStart = false;
      await listWatch.start();
      if (!failedSinceStart) events.onSynced();
    },
    stop: async () => {
      listing?.abort();
      await listWatch.stop();
    },
  };
}
