/**
 * The Ingress status writer: which addresses this controller is reachable at, and
 * `status.loadBalancer.ingress` of the Ingresses it serves set to them, as ingress-nginx's
 * internal/ingress/status does. Only the leader runs it; every write is a PUT to /status with the
 * resourceVersion it was computed from, retried after a 409 once the watch has the newer object.
 */
import { isIP } from 'node:net';
import type {
  CoreV1Api,
  NetworkingV1Api,
  V1EndpointSlice,
  V1Ingress,
  V1IngressLoadBalancerIngress,
  V1Node,
  V1Service,
} from '@kubernetes/client-node';
import type { ShutdownCheck } from '../../machines/status.machine.js';
import type { Logger } from '../log.js';
import type { NginxModel } from '../model/nginx-model.js';
import { listChange } from '../model/incremental/list-diff.js';
import { lowerBound } from '../model/sorted.js';
import { changedModelServers, type ModelServers } from '../model/server-diff.js';
import type { ClusterCache } from './cache.js';
import { apiCode, describeApiError } from './leader.js';

/** LoadBalancerAddress is one entry of `status.loadBalancer.ingress`: an IP or a host name. */
export interface LoadBalancerAddress {
  readonly ip?: string;
  readonly hostname?: string;
}

/** PodInfo is what the downward API tells the controller about its own pod (env POD_NAME, POD_NAMESPACE, NODE_NAME). */
export interface PodInfo {
  readonly name: string | null;
  readonly namespace: string | null;
  readonly nodeName: string | null;
}

/** podInfoFromEnv reads PodInfo from the environment; empty values count as unset. */
export function podInfoFromEnv(env: NodeJS.ProcessEnv): PodInfo {
  return { name: env.POD_NAME || null, namespace: env.POD_NAMESPACE || null, nodeName: env.NODE_NAME || null };
}

/** AddressSource is where the addresses come from, in ingress-nginx's order of precedence. */
export interface AddressSource {
  /** `--publish-status-address`, split on commas */
  readonly publishStatusAddress: readonly string[];
  /** `--publish-service ns/name` */
  readonly publishService: string | null;
  readonly pod: PodInfo;
  /** `--watch-namespace`: a publish Service outside it is read with a GET, not from the cache */
  readonly watchNamespace: string | null;
}

/** StatusWriterOptions are the clients, the cache and where the addresses come from. */
export interface StatusWriterOptions {
  readonly networking: NetworkingV1Api;
  readonly core: CoreV1Api;
  readonly cache: ClusterCache;
  readonly source: AddressSource;
  readonly log: Logger;
  /** how long a write waits after a 409 for the watch to bring the newer object */
  readonly conflictWaitMs?: number;
}

/** PublishResult counts what one publish did. */
export interface PublishResult {
  readonly written: number;
  readonly unchanged: number;
}

/**
 * servedIngresses lists `namespace/name` of every Ingress that has a location in the model: the Ingresses this
 * controller owns.
 */
export function servedIngresses(model: NginxModel): Set<string> {
  const served = new Set<string>();
  for (const server of [model.defaultServer, ...model.servers])
    for (const location of server.locations) if (location.ingress) served.add(location.ingress);
  return served;
}

/**
 * ServedIngresses gives each sync's served Ingresses, sorted, looking only at the servers that changed since the last
 * model (an incremental build keeps the others' objects): it counts each Ingress's locations, and sorts the list again
 * only when an Ingress came or went (the same list otherwise).
 */
export class ServedIngresses {
  private servers: ModelServers | null = null;
  private readonly counts = new Map<string, number>();
  private list: readonly string[] = [];

  of(model: NginxModel): readonly string[] {
    const { added, removed } = changedModelServers(this.servers, model);
    this.servers = { defaultServer: model.defaultServer, servers: model.servers };
    const came = new Set<string>();
    const went = new Set<string>();
    for (const server of added)
      for (const location of server.locations) {
        if (!location.ingress) continue;
        const count = this.counts.get(location.ingress) ?? 0;
        this.counts.set(location.ingress, count + 1);
        if (count === 0) came.add(location.ingress);
      }
    for (const server of removed)
      for (const location of server.locations) {
        if (!location.ingress) continue;
        const left = (this.counts.get(location.ingress) ?? 1) - 1;
        if (left > 0) this.counts.set(location.ingress, left);
        else {
          this.counts.delete(location.ingress);
          if (!came.delete(location.ingress)) went.add(location.ingress);
        }
      }
    if (came.size + went.size === 0) return this.list;
    this.list = nextServedList(this.list, came, went);
    return this.list;
  }
}

/**
 * the step each served list was made by (nextServedList): the list before it and the Ingresses that came or went. Only
 * the newest list keeps its step, so that no list holds on to all those before it.
 */
const servedSteps = new WeakMap<readonly string[], { readonly from: readonly string[]; readonly keys: string[] }>();

/**
 * nextServedList is a new sorted served list (the last one was handed out): `list` with the Ingresses that `came` put
 * in and those that `went` taken out, in place. It remembers the step, which servedLookup reads.
 */
export function nextServedList(
  list: readonly string[],
  came: ReadonlySet<string>,
  went: ReadonlySet<string>,
): readonly string[] {
  const next = list.slice();
  for (const ingress of went) next.splice(sortedIndex(next, ingress), 1);
  for (const ingress of came) next.splice(sortedIndex(next, ingress), 0, ingress);
  servedSteps.delete(list);
  servedSteps.set(next, { from: list, keys: [...came, ...went] });
  return next;
}

/**
 * ServedLookup is what the status writer asks of the served Ingresses: whether one is served, and, when it can tell
 * without a walk, which Ingresses are served by one of it and `earlier` but not by the other (null when it cannot).
 * A Set is one (it cannot tell).
 */
export interface ServedLookup {
  has(key: string): boolean;
  changedSince?(earlier: ServedLookup): Iterable<string> | null;
}

/** SortedServed is a sorted served list as a ServedLookup: a binary search, not a Set of 10,000 names per change. */
class SortedServed implements ServedLookup {
  constructor(readonly list: readonly string[]) {}
  has(key: string): boolean {
    return this.list[sortedIndex(this.list, key)] === key;
  }
  changedSince(earlier: ServedLookup): Iterable<string> | null {
    const step = servedSteps.get(this.list);
    return step && earlier instanceof SortedServed && step.from === earlier.list ? step.keys : null;
  }
}

const lookups = new WeakMap<readonly string[], ServedLookup>();

/**
 * servedLookup is a served list as a ServedLookup, one per list: a binary search when it is sorted
 * (ServedIngresses.of's always is), else a Set.
 */
export function servedLookup(list: readonly string[]): ServedLookup {
  let lookup = lookups.get(list);
  if (lookup === undefined) {
    // a list nextServedList made is sorted by construction; any other is checked
    const sorted = servedSteps.has(list) || list.every((key, i) => i === 0 || list[i - 1]! < key);
    lookup = sorted ? new SortedServed(list) : new Set(list);
    lookups.set(list, lookup);
  }
  return lookup;
}

/** sortedIndex is where `key` stands or would stand in the sorted `list` (code-unit order, as sort()). */
const sortedIndex = (list: readonly string[], key: string) => lowerBound(list, (k) => k < key);

/** toAddress turns a name or IP into a LoadBalancerAddress, as ingress-nginx's nameOrIPToLoadBalancerIngress. */
export function toAddress(nameOrIp: string): LoadBalancerAddress {
  return isIP(nameOrIp) ? { ip: nameOrIp } : { hostname: nameOrIp };
}

/** sortAddresses orders and deduplicates addresses (host name, then IP), so equal sets compare equal. */
export function sortAddresses(addresses: readonly LoadBalancerAddress[]): LoadBalancerAddress[] {
  const seen = new Map<string, LoadBalancerAddress>();
  for (const a of addresses) {
    const clean: LoadBalancerAddress = {
      ...(a.ip ? { ip: a.ip } : {}),
      ...(a.hostname ? { hostname: a.hostname } : {}),
    };
    if (clean.ip || clean.hostname) seen.set(`${clean.hostname ?? ''}\0${clean.ip ?? ''}`, clean);
  }
  return [...seen.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

/** currentAddresses reads an Ingress's status addresses, sorted (ports and errors are not compared). */
export function currentAddresses(ingress: V1Ingress): LoadBalancerAddress[] {
  return sortAddresses(
    (ingress.status?.loadBalancer?.ingress ?? []).map((e) => ({
      ...(e.ip ? { ip: e.ip } : {}),
      ...(e.hostname ? { hostname: e.hostname } : {}),
    })),
  );
}

/** sameAddresses compares two sorted address lists. */
export function sameAddresses(a: readonly LoadBalancerAddress[], b: readonly LoadBalancerAddress[]): boolean {
  return a.length === b.length && a.every((x, i) => x.ip === b[i]!.ip && x.hostname === b[i]!.hostname);
}

const keyOf = (o: { metadata?: { namespace?: string; name?: string } }) =>
  `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/**
 * runLimited runs the writes 8 at a time (as ingress-nginx's pool of 10) and counts those that wrote; the first failure
 * rejects after all settled.
 */
async function runLimited(tasks: ReadonlyArray<() => Promise<boolean>>, limit = 8): Promise<number> {
  let next = 0;
  let written = 0;
  const failures: unknown[] = [];
  const worker = async () => {
    while (next < tasks.length) {
      const task = tasks[next++]!;
      try {
        if (await task()) written++;
      } catch (error) {
        failures.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  if (failures.length > 0) throw failures[0];
  return written;
}

/** serviceAddresses is ingress-nginx's statusAddressFromService: what a Service of each type is reachable at. */
export function serviceAddresses(service: V1Service): LoadBalancerAddress[] {
  const spec = service.spec ?? {};
  const external = (spec.externalIPs ?? []).map((ip) => ({ ip }));
  switch (spec.type ?? 'ClusterIP') {
    case 'ExternalName':
      return spec.externalName ? [{ hostname: spec.externalName }] : [];
    case 'NodePort':
      return external.length > 0
        ? external
        : spec.clusterIP && spec.clusterIP !== 'None'
          ? [{ ip: spec.clusterIP }]
          : [];
    case 'LoadBalancer': {
      const lb = (service.status?.loadBalancer?.ingress ?? []).map((i) =>
        i.ip ? { ip: i.ip } : { hostname: i.hostname ?? '' },
      );
      return [...lb, ...external];
    }
    default:
      return spec.clusterIP && spec.clusterIP !== 'None' ? [{ ip: spec.clusterIP }] : [];
  }
}

/**
 * nodeAddress is a Node's ExternalIP, else its InternalIP (ingress-nginx's GetNodeIPOrName without
 * --report-node-internal-ip-address).
 */
export function nodeAddress(node: V1Node): string | null {
  const addresses = node.status?.addresses ?? [];
  return (
    addresses.find((a) => a.type === 'ExternalIP')?.address ??
    addresses.find((a) => a.type === 'InternalIP')?.address ??
    null
  );
}

type Endpoint = NonNullable<V1EndpointSlice['endpoints']>[number];
const isReady = (e: Endpoint) => e.conditions?.ready !== false && e.conditions?.terminating !== true;
const isPod = (e: Endpoint, pod: PodInfo) =>
  e.targetRef?.kind === 'Pod' &&
  e.targetRef.name === pod.name &&
  (!e.targetRef.namespace || e.targetRef.namespace === pod.namespace);

/**
 * StatusWriter computes this controller's addresses and brings the status of the Ingresses it
 * serves in line with them, writing only where they differ.
 */
export class StatusWriter {
  private podNode: { name: string | null } | null = null;
  /** what the last publish that went through wrote from */
  private published: {
    readonly addresses: readonly LoadBalancerAddress[];
    readonly served: ServedLookup;
    readonly ingresses: readonly V1Ingress[];
  } | null = null;

  constructor(private readonly options: StatusWriterOptions) {}

  /**
   * peerSlices are the EndpointSlices that list this controller's replicas: the --publish-service
   * Service's, else those in the pod's namespace that list this pod. Null when neither is known.
   */
  peerSlices(): V1EndpointSlice[] | null {
    const { publishService, pod } = this.options.source;
    const slices = this.options.cache.list<V1EndpointSlice>('EndpointSlice');
    if (publishService) {
      const [ns, name] = publishService.split('/');
      return slices.filter(
        (s) => s.metadata?.namespace === ns && s.metadata?.labels?.['kubernetes.io/service-name'] === name,
      );
    }
    if (!pod.name || !pod.namespace) return null;
    return slices.filter(
      (s) => s.metadata?.namespace === pod.namespace && (s.endpoints ?? []).some((e) => isPod(e, pod)),
    );
  }

  /**
   * checkPeers answers "will another replica take over?" on shutdown from the EndpointSlices of
   * the controller's own Service: yes when a ready endpoint other than this pod is listed
   * (ingress-nginx lists pods instead, which needs more RBAC). No information counts as no.
   */
  checkPeers(): ShutdownCheck {
    const slices = this.peerSlices();
    if (slices === null)
      return {
        othersWillTakeOver: false,
        reason: 'no peer information (neither --publish-service nor POD_NAME/POD_NAMESPACE)',
      };
    const { pod } = this.options.source;
    const others = slices.flatMap((s) => s.endpoints ?? []).filter((e) => isReady(e) && !(pod.name && isPod(e, pod)));
    const count = pod.name ? others.length : Math.max(0, others.length - 1);
    return { othersWillTakeOver: count > 0, reason: `${count} other ready replica endpoint(s)` };
  }

  /**
   * addresses resolves where this controller is reachable: --publish-status-address, else the
   * --publish-service Service, else the addresses of the nodes its ready replicas run on (the
   * peers' nodeName in the EndpointSlices, and this pod's NODE_NAME). Rejects when a source it
   * needs cannot be read, so a failure never clears anything.
   */
  async addresses(): Promise<LoadBalancerAddress[]> {
    const { publishStatusAddress, publishService } = this.options.source;
    if (publishStatusAddress.length > 0) return sortAddresses(publishStatusAddress.map(toAddress));
    if (publishService) return sortAddresses(serviceAddresses(await this.publishedService(publishService)));
    const nodes = new Set<string>();
    const own = await this.ownNode();
    if (own) nodes.add(own);
    for (const slice of this.peerSlices() ?? [])
      for (const e of slice.endpoints ?? []) if (isReady(e) && e.nodeName) nodes.add(e.nodeName);
    const byName = new Map(this.options.cache.list<V1Node>('Node').map((n) => [n.metadata?.name ?? '', n]));
    const found = [...nodes].map((n) => byName.get(n)).map((n) => (n ? nodeAddress(n) : null));
    return sortAddresses(found.filter((a) => a !== null).map(toAddress));
  }

  /**
   * publish sets the served Ingresses' addresses, and clears them on Ingresses that show exactly
   * these addresses but are no longer served (their class changed, or every rule was refused).
   * `served` is `namespace/name` of every Ingress the last sync served; null before the first
   * sync, when it does nothing: an empty model would look like "serve nothing".
   */
  async publish(served: ServedLookup | null): Promise<PublishResult> {
    if (served === null) return { written: 0, unchanged: 0 };
    const addresses = await this.addresses();
    const ingresses = this.options.cache.list<V1Ingress>('Ingress');
    const last = this.published;
    const look =
      last !== null && sameAddresses(last.addresses, addresses) ? this.outOfLine(last, served, ingresses) : ingresses;
    let unchanged = 0;
    const writes: Array<() => Promise<boolean>> = [];
    for (const ingress of look) {
      const current = currentAddresses(ingress);
      const ours = served.has(keyOf(ingress));
      if (!ours && !(addresses.length > 0 && sameAddresses(current, addresses))) continue;
      const desired = ours ? addresses : [];
      if (sameAddresses(current, desired)) unchanged++;
      else writes.push(() => this.write(ingress, desired));
    }
    const written = await runLimited(writes);
    this.published = { addresses, served, ingresses };
    return { written, unchanged };
  }

  /**
   * outOfLine is what may be out of line since the last publish that went through, under the same addresses: the
   * Ingresses replaced or added since (the watch brings each written status back as a new object, looked at again
   * then), and those that came or went from the served ones when `served` can tell which (else every Ingress).
   */
  private outOfLine(
    last: NonNullable<StatusWriter['published']>,
    served: ServedLookup,
    ingresses: readonly V1Ingress[],
  ): Iterable<V1Ingress> {
    const came = listChange(last.ingresses, ingresses).came;
    if (last.served === served) return came;
    const keys = served.changedSince?.(last.served) ?? null;
    if (keys === null) return ingresses;
    const look = new Set(came);
    for (const key of keys) {
      const ingress = this.options.cache.get<V1Ingress>('Ingress', key);
      if (ingress) look.add(ingress);
    }
    return look;
  }

  /**
   * clear empties the addresses of every served Ingress (on the last replica's shutdown); returns how many it wrote.
   */
  async clear(served: ReadonlySet<string>): Promise<number> {
    const ingresses = this.options.cache
      .list<V1Ingress>('Ingress')
      .filter((i) => served.has(keyOf(i)) && currentAddresses(i).length > 0);
    return runLimited(ingresses.map((ingress) => () => this.write(ingress, [])));
  }

  /**
   * write PUTs one Ingress's /status with the resourceVersion it was read at. On 409 it waits
   * for the watch to deliver the newer object and tries again from that (at most 5 times),
   * unless the newer object already says what it wanted. False when nothing was written.
   */
  private async write(ingress: V1Ingress, desired: readonly LoadBalancerAddress[]): Promise<boolean> {
    const { networking, log } = this.options;
    let current = ingress;
    for (let attempt = 1; attempt <= 5; attempt++) {
      const namespace = current.metadata?.namespace ?? '';
      const name = current.metadata?.name ?? '';
      const body: V1Ingress = {
        ...current,
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        status: {
          ...current.status,
          loadBalancer: {
            ...current.status?.loadBalancer,
            ingress: desired.map((a) => ({ ...a }) as V1IngressLoadBalancerIngress),
          },
        },
      };
      try {
        await networking.replaceNamespacedIngressStatus({ name, namespace, body });
        log.info(
          { ingress: `${namespace}/${name}`, addresses: desired.map((a) => a.ip ?? a.hostname) },
          'Ingress status updated',
        );
        return true;
      } catch (error) {
        const code = apiCode(error);
        if (code === 404) return false;
        if (code !== 409)
          throw new Error(`updating the status of Ingress ${namespace}/${name}: ${describeApiError(error)}`);
        const newer = await this.newerFromCache(current);
        if (!newer) return false;
        if (sameAddresses(currentAddresses(newer), sortAddresses(desired))) return false;
        log.debug(
          { ingress: `${namespace}/${name}`, attempt },
          'status write conflicted; retrying from the newer object',
        );
        current = newer;
      }
    }
    throw new Error(`updating the status of Ingress ${keyOf(ingress)}: still conflicting after 5 attempts`);
  }

  /**
   * newerFromCache waits (bounded) until the cache holds a version other than `stale`; null when the Ingress is gone or
   * nothing came.
   */
  private async newerFromCache(stale: V1Ingress): Promise<V1Ingress | null> {
    const deadline = Date.now() + (this.options.conflictWaitMs ?? 2_000);
    const key = keyOf(stale);
    for (;;) {
      const found = this.options.cache.list<V1Ingress>('Ingress').find((i) => keyOf(i) === key);
      if (!found) return null;
      if (found.metadata?.resourceVersion !== stale.metadata?.resourceVersion) return found;
      if (Date.now() > deadline) return null;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private async publishedService(ref: string): Promise<V1Service> {
    const [namespace, name] = ref.split('/') as [string, string];
    const { watchNamespace } = this.options.source;
    if (watchNamespace === null || watchNamespace === namespace) {
      const cached = this.options.cache.list<V1Service>('Service').find((s) => keyOf(s) === ref);
      if (!cached) throw new Error(`--publish-service ${ref}: no such Service`);
      return cached;
    }
    // Outside the watched namespace: read it (needs `get services` there, see docs/operations.md).
    return this.options.core.readNamespacedService({ name, namespace });
  }

  /** ownNode is NODE_NAME, else the nodeName of this pod (POD_NAMESPACE/POD_NAME, read once; needs `get pods`). */
  private async ownNode(): Promise<string | null> {
    const { pod } = this.options.source;
    if (pod.nodeName) return pod.nodeName;
    if (!pod.name || !pod.namespace) return null;
    if (this.podNode) return this.podNode.name;
    try {
      const found = await this.options.core.readNamespacedPod({ name: pod.name, namespace: pod.namespace });
      this.podNode = { name: found.spec?.nodeName ?? null };
    } catch (error) {
      if (apiCode(error) !== 404 && apiCode(error) !== 403) throw error;
      this.options.log.warn(
        { pod: `${pod.namespace}/${pod.name}`, error: describeApiError(error) },
        'cannot read this pod for its node; set NODE_NAME from spec.nodeName',
      );
      this.podNode = { name: null };
    }
    return this.podNode.name;
  }
}
