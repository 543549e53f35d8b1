/**
 * A conformance test as data: the steps its Go test takes (the waits of conformance/utils/kubernetes/helpers.go
 * and the requests of conformance/utils/http), and the runner that takes them against the harness.
 */
import { randomUUID } from 'node:crypto';
import { connect as tlsConnect } from 'node:tls';
import type { KubernetesObject } from '@kubernetes/client-node';
import * as grpc from '@grpc/grpc-js';
import { WebSocket } from 'ws';
import { callEcho, GRPC_ECHO_SERVICE, GrpcEchoClient } from '../support/grpc-echo.js';
import { CONTROLLER_NAME, type Harness } from './harness.js';
import {
  compare,
  expectEventually,
  expectFailure,
  send,
  type ExpectedResponse,
  type Target,
  type Timing,
  withRequestId,
} from './http.js';

export interface NN {
  readonly namespace: string;
  readonly name: string;
}
/** Cond is an expected condition; an absent status or reason matches any (Go: findConditionInList). */
export interface Cond {
  readonly type: string;
  readonly status?: 'True' | 'False' | 'Unknown';
  readonly reason?: string;
}
export interface ParentStatus {
  readonly parentRef: {
    readonly group?: string;
    readonly kind?: string;
    readonly name: string;
    readonly namespace?: string;
    readonly sectionName?: string;
  };
  readonly controllerName?: string;
  readonly conditions: readonly Cond[];
}
export interface ListenerStatus {
  readonly name: string;
  readonly supportedKinds: readonly { readonly group?: string; readonly kind: string }[];
  readonly attachedRoutes: number;
  readonly conditions: readonly Cond[];
}

/** RouteKind is the kind a route step reads: HTTPRoute unless a step names another. */
export type RouteKind = 'HTTPRoute' | 'GRPCRoute' | 'TLSRoute' | 'TCPRoute' | 'UDPRoute';

export type Step =
  /** GatewayAndHTTPRoutesMustBeAccepted: an address, each route Accepted by the Gateway (per listener), listeners ready */
  | {
      readonly kind: 'accepted';
      readonly gateway: NN;
      readonly listeners?: readonly string[];
      readonly routes: readonly NN[];
      /** the routes' kind (GatewayAndRoutesMustBeAccepted's route type); HTTPRoute when absent */
      readonly routeKind?: RouteKind;
    }
  /** grpc.MakeRequestAndExpectEventuallyConsistentResponse for each case, to the Gateway's address (h2c) */
  | { readonly kind: 'grpcRequests'; readonly gateway: NN; readonly cases: readonly GrpcExpected[] }
  /** HTTPRouteMustHaveCondition (TLSRouteMustHaveCondition, … with routeKind) */
  | {
      readonly kind: 'routeCondition';
      readonly route: NN;
      readonly gateway: NN;
      readonly condition: Cond;
      readonly routeKind?: RouteKind;
    }
  /** HTTPRouteMustHaveParents */
  | {
      readonly kind: 'routeParents';
      readonly route: NN;
      readonly parents: readonly ParentStatus[];
      readonly namespaceRequired: boolean;
      readonly routeKind?: RouteKind;
    }
  /** HTTPRouteMustHaveNoAcceptedParents (TLSRouteMustHaveNoAcceptedParents with routeKind) */
  | { readonly kind: 'routeNoAcceptedParents'; readonly route: NN; readonly routeKind?: RouteKind }
  /** GatewayStatusMustHaveListeners */
  | { readonly kind: 'gatewayListeners'; readonly gateway: NN; readonly listeners: readonly ListenerStatus[] }
  /** GatewayMustHaveZeroRoutes: no listener status, or one listener with no attached route */
  | { readonly kind: 'gatewayZeroRoutes'; readonly gateway: NN }
  /** GatewayMustHaveCondition */
  | { readonly kind: 'gatewayCondition'; readonly gateway: NN; readonly condition: Cond }
  /** status.addresses eventually exactly these (gateway-static-addresses.go: one address, the usable one, its type) */
  | {
      readonly kind: 'gatewayAddresses';
      readonly gateway: NN;
      readonly addresses: readonly { readonly type: string; readonly value: string }[];
    }
  /** GatewayListenersMustHaveConditions (every listener, or the one named) */
  | {
      readonly kind: 'listenerConditions';
      readonly gateway: NN;
      readonly listener?: string;
      readonly conditions: readonly Cond[];
    }
  /** MakeRequestAndExpectEventuallyConsistentResponse for each case, to the Gateway's address and listener */
  | {
      readonly kind: 'requests';
      readonly gateway: NN;
      readonly listener?: string;
      readonly scheme?: 'http' | 'https';
      readonly cases: readonly ExpectedResponse[];
    }
  /** MakeRequestAndExpectFailure */
  | { readonly kind: 'failures'; readonly gateway: NN; readonly cases: readonly ExpectedResponse[] }
  /** apply or delete one more manifest of test/conformance/manifests mid-test */
  | { readonly kind: 'apply' | 'remove'; readonly manifest: string }
  /**
   * setupEndpointSlices (httproute-service-types.go): the manual slices `<name>-ip4` get the pods of `deployment` as
   * endpoints (IPv6 slices stay empty: the pods have no IPv6 address), at the pods' port
   */
  | {
      readonly kind: 'podsIntoSlices';
      readonly namespace: string;
      readonly slices: readonly string[];
      readonly deployment: string;
    }
  /** NamespacesMustBeReady: every Gateway of the namespace (but those annotated to be skipped) Accepted and Programmed */
  | { readonly kind: 'namespaceReady'; readonly namespace: string }
  /** GatewayMustHaveLatestConditions, GatewayClassMustHaveLatestConditions, HTTPRouteMustHaveLatestConditions */
  | { readonly kind: 'latest'; readonly objectKind: 'Gateway' | 'GatewayClass' | 'HTTPRoute'; readonly object: NN }
  /** GWCMustHaveAcceptedConditionAny */
  | { readonly kind: 'gatewayClassAccepted'; readonly name: string }
  /**
   * BackendTLSPolicyMustHaveCondition: every ancestors[] entry's conditions of the latest generation, and the
   * Gateway's entry with the condition
   */
  | { readonly kind: 'policyCondition'; readonly policy: NN; readonly gateway: NN; readonly condition: Cond }
  /** BackendTLSPolicyMustHaveLatestConditions: no ancestors[] condition of an older generation, now */
  | { readonly kind: 'policyLatest'; readonly policy: NN }
  /** what a Go test does with its client between the helpers (get, patch or create an object), as a function */
  | { readonly kind: 'client'; readonly what: string; readonly run: (h: Harness, t: Timeouts) => Promise<unknown> }
  /**
   * a merge patch computed from the object as it is (client.MergeFrom in Go), after which its generation must
   * have changed
   */
  | {
      readonly kind: 'mutate';
      readonly objectKind: 'Gateway' | 'GatewayClass' | 'HTTPRoute';
      readonly object: NN;
      readonly patch: (current: { spec?: Record<string, unknown> }) => object;
    }
  /**
   * the HTTPRouteWeight check (conformance/utils/weight): 500 requests, 10 at a time, each backend's share within
   * 0.05 of its weight; like the Go suite, the statistical test is tried up to 10 times
   */
  | {
      readonly kind: 'weights';
      readonly gateway: NN;
      readonly expected: ExpectedResponse;
      readonly weights: Readonly<Record<string, number>>;
    }
  /** GRPCRouteWeight's check: the same statistics over Echo calls (h2c), after one answers OK */
  | {
      readonly kind: 'grpcWeights';
      readonly gateway: NN;
      /** the namespace of the pods that answer */
      readonly namespace: string;
      readonly weights: Readonly<Record<string, number>>;
    }
  /**
   * httproute-backend-protocol-websocket.go: a WebSocket to `ws://<gateway>/ws` (Origin `ws://gateway/<test>`) gets a
   * text and a binary message back unchanged, `threshold` times in a row (AwaitConvergence)
   */
  | { readonly kind: 'websocket'; readonly gateway: NN; readonly origin: string }
  /**
   * httproute-request-header-modifier-backend-weights.go: after `expected` answers consistently, `times` requests
   * each reach a pod whose name starts with the one value of the request header `header` the backend saw
   */
  | {
      readonly kind: 'headerNamesPod';
      readonly gateway: NN;
      readonly expected: ExpectedResponse;
      readonly header: string;
      readonly times: number;
    }
  /**
   * httproute-request-percentage-mirror.go, per case: it answers consistently; then, up to 5 times, 500 requests (10
   * at a time) with one request ID, and each mirror's pods logged it within 3 standard deviations of its percent
   */
  | { readonly kind: 'mirrorShares'; readonly gateway: NN; readonly cases: readonly ExpectedResponse[] }
  /** delete one object (kubectl delete RESOURCE NAME -n NAMESPACE) */
  | { readonly kind: 'delete'; readonly resource: string; readonly namespace: string; readonly name: string }
  /** tls.MakeTLSConnectionAndExpectEventuallyConnectionRejection: a TLS dial to the Gateway with this SNI name fails */
  | { readonly kind: 'tlsRejected'; readonly gateway: NN; readonly listener?: string; readonly serverName: string }
  /** GatewayMustHaveAttachedListeners: status.attachedListenerSets (absent: 0), the conditions of the latest generation */
  | { readonly kind: 'attachedListenerSets'; readonly gateway: NN; readonly count: number }
  /** ListenerSetMustHaveCondition */
  | { readonly kind: 'listenerSetCondition'; readonly listenerSet: NN; readonly condition: Cond }
  /** ListenerSetStatusMustHaveListeners (listenerSetListenersMatch: the same count, each expected one as described) */
  | { readonly kind: 'listenerSetListeners'; readonly listenerSet: NN; readonly listeners: readonly ListenerStatus[] }
  /** ListenerSetListenersMustHaveConditions: each listener named (every listener when none is) has every condition */
  | {
      readonly kind: 'listenerSetListenerConditions';
      readonly listenerSet: NN;
      readonly listeners?: readonly string[];
      readonly conditions: readonly Cond[];
    };

/** GrpcExpected is conformance/utils/grpc's ExpectedResponse: one RPC of the echo and what must answer it. */
export interface GrpcExpected {
  readonly method: 'Echo' | 'EchoTwo' | 'EchoThree';
  /** RequestMetadata: the :authority and outgoing metadata */
  readonly authority?: string;
  readonly metadata?: Readonly<Record<string, string>>;
  /** the gRPC status code (OK when absent) */
  readonly code?: grpc.status;
  /** the pod name's prefix and its namespace, for an OK answer */
  readonly backend?: string;
  readonly namespace?: string;
}

/** ConformanceCase is one Go conformance test transcribed: its name (the inventory's) and its steps. */
export interface ConformanceCase {
  readonly name: string;
  readonly steps: readonly Step[];
}

/** Timeouts are the suite's waits, shorter than Go's defaults (60–180 s): a loopback cluster settles in seconds. */
export interface Timeouts extends Timing {
  readonly statusMs: number;
  readonly pollMs: number;
}

const GW = 'gateway.networking.k8s.io/v1';

interface Condition {
  type: string;
  status: string;
  reason: string;
  observedGeneration?: number;
}
type WithStatus = KubernetesObject & { status?: Record<string, unknown>; spec?: Record<string, unknown> };

const matches = (c: Condition, want: Cond) =>
  c.type === want.type && (!want.status || c.status === want.status) && (!want.reason || c.reason === want.reason);
const conditionsMatch = (want: readonly Cond[], actual: readonly Condition[]) =>
  want.every((w) => actual.some((c) => matches(c, w)));
const stale = (obj: WithStatus, conditions: readonly Condition[]) =>
  conditions.some((c) => c.observedGeneration !== obj.metadata?.generation);
const show = (x: unknown) => JSON.stringify(x);

/** poll checks until `check` gives null (done) or the time is up; it throws with the last reason. */
async function poll(what: string, ms: number, every: number, check: () => Promise<string | null>): Promise<void> {
  const started = Date.now();
  let last = 'not checked';
  while (Date.now() - started < ms) {
    last = (await check()) ?? '';
    if (last === '') return;
    await new Promise((r) => setTimeout(r, every));
  }
  throw new Error(`${what}: not within ${ms} ms; last: ${last}`);
}

/** tlsDialFails says whether a TLS dial (any certificate accepted) ends before its handshake completes. */
function tlsDialFails(host: string, port: number, servername: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port, servername, rejectUnauthorized: false, minVersion: 'TLSv1.2' }, () => {
      socket.destroy();
      resolve(false);
    });
    socket.setTimeout(5_000, () => socket.destroy(new Error('timeout')));
    socket.on('error', () => resolve(true));
    socket.on('close', () => resolve(true));
  });
}

/** backendOf is weight.go's extractBackendName: a pod name without its ReplicaSet and pod suffixes. */
export const backendOf = (pod: string) => {
  const parts = pod.split('-');
  return parts.length < 3 ? pod : parts.slice(0, -2).join('-');
};

/** weightedDistribution is one TestWeightedDistribution: '' when every share is within tolerance, else why not. */
async function weightedDistribution(
  sample: () => Promise<string>,
  weights: Readonly<Record<string, number>>,
): Promise<string> {
  const total = 500;
  const seen = new Map<string, number>();
  let next = 0;
  const errors: string[] = [];
  const worker = async () => {
    while (next < total) {
      next++;
      try {
        const backend = await sample();
        if (!(backend in weights)) throw new Error(`request was handled by an unexpected pod (backend ${backend})`);
        seen.set(backend, (seen.get(backend) ?? 0) + 1);
      } catch (error) {
        errors.push((error as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: 10 }, worker));
  if (errors.length > 0) return `error while sending requests: ${errors[0]}`;
  const problems: string[] = [];
  const active = Object.values(weights).filter((w) => w > 0).length;
  if (seen.size !== active) problems.push(`expected ${active} backends to receive traffic, but got ${seen.size}`);
  for (const [backend, want] of Object.entries(weights)) {
    const got = (seen.get(backend) ?? 0) / total;
    if (!seen.has(backend) && want !== 0)
      problems.push(`expect traffic to hit backend ${backend} - but none was received`);
    else if (Math.abs(got - want) > 0.05)
      problems.push(`backend ${backend} weighted traffic of ${got} not within tolerance ${want} (+/-0.05)`);
  }
  return problems.sort().join('; ');
}

/** httpSample is weight.go's HTTP sender: one request (AddEntropy: half carry a random X-Jitter), its pod's backend. */
const httpSample = (target: Target, expected: ExpectedResponse) => async (): Promise<string> => {
  const jitter: Record<string, string> =
    Math.random() < 0.5 ? { 'X-Jitter': String(Math.floor(Math.random() * 10_000)) } : {};
  const got = await send(target, expected.request, { 'X-Echo-Set-Header': '', ...jitter });
  const why = compare(expected, got);
  if (why) throw new Error(why);
  return backendOf((JSON.parse(got.body) as { pod: string }).pod);
};

/**
 * OWN_CONNECTION gives a client connections of its own, as Go's does: grpc-js otherwise shares them by address among
 * clients, so one that an earlier test left backing off after a refused connect (its Gateway's port not yet served)
 * fails the next test's calls at once with UNAVAILABLE.
 */
const OWN_CONNECTION: grpc.ChannelOptions = { 'grpc.use_local_subchannel_pool': 1 };

/** grpcSample is grpcroute-weight.go's sender: one Echo (AddEntropy: random metadata), OK, its pod's backend. */
const grpcSample = (client: grpc.Client) => async (): Promise<string> => {
  const jitter: Record<string, string> = Math.random() < 0.5 ? { 'x-jitter': String(Math.random()) } : {};
  const got = await callEcho(client, `/${GRPC_ECHO_SERVICE}/Echo`, jitter);
  if (!got.ok) throw new Error(`expected OK response, got ${grpc.status[got.code]} (${got.details})`);
  return backendOf(got.response.assertions.context.pod);
};

/** distributionWithin runs the statistical test up to 10 times, as weight.MaxTestRetries, and throws the last why. */
export async function distributionWithin(sample: () => Promise<string>, weights: Readonly<Record<string, number>>) {
  let last = '';
  for (let attempt = 0; attempt < 10; attempt++) {
    last = await weightedDistribution(sample, weights);
    if (last === '') return;
  }
  throw new Error(`weighted distribution: ${last}`);
}

/**
 * expectMirrored is the mirror tests' case: a request ID in the query, the answer as usual, and each mirror
 * backend's pods must have logged the request within 10 s (ExpectMirroredRequest reads the echo pods' logs).
 */
async function expectMirrored(h: Harness, target: Target, c: ExpectedResponse, t: Timeouts): Promise<void> {
  const e = withRequestId(c, randomUUID());
  await expectEventually(target, e, t);
  for (const mirror of c.mirroredTo ?? []) {
    const pods = h.pods.filter((p) => p.namespace === mirror.namespace && p.pod.startsWith(`${mirror.name}-`));
    await poll(`the request mirrored to ${mirror.namespace}/${mirror.name}`, 10_000, 250, async () =>
      pods.some((p) => p.echoed.includes(e.request.path)) ? null : `not in the logs of ${pods.map((p) => p.pod)}`,
    );
  }
}

/** mirrorShare is one case of the percentage mirror test (see the step); it throws after 5 failed checks. */
async function mirrorShare(h: Harness, target: Target, c: ExpectedResponse, t: Timeouts): Promise<void> {
  await expectEventually(target, c, t);
  const total = 500;
  let last = '';
  for (let check = 0; check < 5; check++) {
    const e = withRequestId(c, randomUUID());
    let next = 0;
    const worker = async () => {
      while (next < total) {
        next++;
        await expectEventually(target, e, { ...t, threshold: 1 });
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
    const problems: string[] = [];
    for (const mirror of c.mirroredTo ?? []) {
      const pods = h.pods.filter((p) => p.namespace === mirror.namespace && p.pod.startsWith(`${mirror.name}-`));
      const count = () => pods.reduce((n, p) => n + p.echoed.filter((u) => u === e.request.path).length, 0);
      // the copies still on their way when the last answer came: the count settles (Go reads the logs later)
      let seen = -1;
      for (let waited = 0; seen !== count() && waited < 3_000; waited += 250) {
        seen = count();
        await new Promise((r) => setTimeout(r, 250));
      }
      const p = (mirror.percent ?? 100) / 100;
      const margin = 3 * Math.sqrt(total * p * (1 - p));
      const actual = count();
      if (actual < total * p - margin || actual > total * p + margin)
        problems.push(`${mirror.name}: ${actual} mirrored, want ${total * p} ± ${margin.toFixed(1)}`);
    }
    if (problems.length === 0) return;
    last = problems.join('; ');
    await new Promise((r) => setTimeout(r, 2_000));
  }
  throw new Error(`percentage based mirror distribution: ${last}`);
}

/** grpcVerdict is compareResponse of conformance/utils/grpc: null when the answer is the expected one. */
async function grpcVerdict(client: grpc.Client, e: GrpcExpected): Promise<string | null> {
  const got = await callEcho(client, `/${GRPC_ECHO_SERVICE}/${e.method}`, { ...(e.metadata ?? {}) });
  const code = got.ok ? grpc.status.OK : got.code;
  const want = e.code ?? grpc.status.OK;
  if (code !== want)
    return `status ${grpc.status[code]}, want ${grpc.status[want]}${got.ok ? '' : ` (${got.details})`}`;
  if (!got.ok) return null;
  const a = got.response.assertions;
  if (a.fully_qualified_method !== `/${GRPC_ECHO_SERVICE}/${e.method}`) return `method ${a.fully_qualified_method}`;
  if (e.namespace && a.context.namespace !== e.namespace) return `namespace ${a.context.namespace}`;
  if (!a.context.pod.startsWith(e.backend ?? '')) return `pod ${a.context.pod}, want ${e.backend}`;
  return null;
}

/** expectGrpcEventually calls until `threshold` answers in a row are the expected one, or throws at maxMs. */
async function expectGrpcEventually(target: Target, e: GrpcExpected, timing: Timing): Promise<void> {
  // Go's client: one connection (h2c, prior knowledge) with the case's :authority, else the address
  const client = new GrpcEchoClient(`${target.address}:${target.port}`, grpc.credentials.createInsecure(), {
    ...OWN_CONNECTION,
    ...(e.authority ? { 'grpc.default_authority': e.authority } : {}),
  });
  try {
    const started = Date.now();
    let [successes, attempts, last] = [0, 0, 'no attempt'];
    while (Date.now() - started < timing.maxMs) {
      attempts++;
      const why = await grpcVerdict(client, e);
      if (why === null) {
        if (++successes >= timing.threshold) return;
        continue;
      }
      last = why;
      successes = 0;
      await new Promise((r) => setTimeout(r, timing.delayMs));
    }
    throw new Error(
      `${e.authority ?? ''}/${e.method} ${show(e.metadata ?? {})}: no consistent answer after ${attempts} attempts; last: ${last}`,
    );
  } finally {
    client.close();
  }
}

/**
 * converge is AwaitConvergence: `check` (null: a success, else why not) until it succeeds `threshold` times in a
 * row; a failure starts the count again, and maxMs fails the step.
 */
async function converge(what: string, timing: Timing, check: () => Promise<string | null>): Promise<void> {
  const started = Date.now();
  let [successes, last] = [0, 'no attempt'];
  while (Date.now() - started < timing.maxMs) {
    const why = await check().catch((error: Error) => error.message);
    if (why === null) {
      if (++successes >= timing.threshold) return;
      continue;
    }
    [successes, last] = [0, why];
    await new Promise((r) => setTimeout(r, timing.delayMs));
  }
  throw new Error(`${what}: not ${timing.threshold} in a row within ${timing.maxMs} ms; last: ${last}`);
}

/** webSocketEcho is one round of the WebSocket test: null when both messages come back unchanged. */
async function webSocketEcho(target: Target, origin: string): Promise<string | null> {
  const host = target.listenerPort === 80 ? target.address : `${target.address}:${target.listenerPort}`;
  const ws = new WebSocket(`ws://${target.address}:${target.port}/ws`, { origin, headers: { host }, timeout: 5_000 });
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`failed to dial: status ${res.statusCode}`)));
    });
    const next = () =>
      new Promise<{ data: Buffer; binary: boolean }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no reply within 5 s')), 5_000);
        ws.once('message', (data, binary) => {
          clearTimeout(timer);
          resolve({ data: data as Buffer, binary });
        });
      });
    const text = 'Websocket Support!';
    ws.send(text);
    const textReply = await next();
    if (textReply.binary || textReply.data.toString('utf8') !== text)
      return `unexpected reply - want: ${text} got: ${textReply.data.toString('utf8')}`;
    const bytes = Buffer.from([1, 2, 3, 4, 5, 6, 7]);
    ws.send(bytes, { binary: true });
    const binaryReply = await next();
    if (!binaryReply.binary || !binaryReply.data.equals(bytes))
      return `unexpected reply - want: ${[...bytes]} got: ${[...binaryReply.data]}`;
    return null;
  } finally {
    ws.terminate();
  }
}

/** EntryStatus is one listener's status entry (a Gateway's or a ListenerSet's), as read. */
type EntryStatus = {
  name: string;
  supportedKinds?: { group?: string; kind: string }[];
  attachedRoutes: number;
  conditions?: Condition[];
};

/**
 * listenersDiffer says how listener status entries differ from the wanted ones (Go's listenersMatch): the same
 * listeners, each with the wanted supported kinds (none when none are wanted), attached routes and conditions; null
 * when they match.
 */
function listenersDiffer(wanted: readonly ListenerStatus[], actual: readonly EntryStatus[]): string | null {
  if (actual.length !== wanted.length) return `${actual.length} listeners: ${show(actual)}`;
  const group = (k: { group?: string }) => k.group ?? 'gateway.networking.k8s.io';
  for (const want of wanted) {
    const a = actual.find((x) => x.name === want.name);
    if (!a) return `no status for listener ${want.name}`;
    const kinds = a.supportedKinds ?? [];
    if (want.supportedKinds.length === 0 && kinds.length !== 0) return `supportedKinds ${show(kinds)}, want none`;
    for (const k of want.supportedKinds)
      if (!kinds.some((x) => group(x) === group(k) && x.kind === k.kind))
        return `listener ${a.name} lacks supported kind ${k.kind}`;
    if (a.attachedRoutes !== want.attachedRoutes)
      return `listener ${a.name} attachedRoutes ${a.attachedRoutes}, want ${want.attachedRoutes}`;
    if (!conditionsMatch(want.conditions, a.conditions ?? [])) return `listener ${a.name}: ${show(a.conditions)}`;
  }
  return null;
}

/** runSteps takes a case's steps in order. */
export async function runSteps(h: Harness, steps: readonly Step[], t: Timeouts): Promise<void> {
  const get = async (kind: string, nn: NN) => (await h.get(GW, kind, nn.namespace, nn.name)) as WithStatus | null;
  const routeParentsOf = (route: WithStatus | null) =>
    (route?.status?.parents ?? []) as {
      parentRef: ParentStatus['parentRef'];
      controllerName: string;
      conditions: Condition[];
    }[];

  const gatewayTarget = async (gw: NN, listener: string | undefined, scheme: 'http' | 'https'): Promise<Target> => {
    let target: Target | undefined;
    await poll(`Gateway ${gw.namespace}/${gw.name} has an address`, t.statusMs, t.pollMs, async () => {
      const g = await get('Gateway', gw);
      if (!g) return 'no such Gateway';
      if (stale(g, (g.status?.conditions ?? []) as Condition[])) return 'conditions not of the latest generation';
      const listeners = (g.spec?.listeners ?? []) as { name: string; port: number }[];
      const l = listeners.find((x) => x.name === listener) ?? listeners[0];
      const address = ((g.status?.addresses ?? []) as { type?: string; value: string }[]).find((a) => a.type);
      if (!l || !address) return `no address in ${show(g.status?.addresses)}`;
      target = {
        address: address.value,
        listenerPort: l.port,
        port: h.mapPort(l.port),
        scheme,
        ...(scheme === 'https' ? { ca: h.infraCertPem } : {}),
      };
      return null;
    });
    return target!;
  };

  const routeParents = async (
    route: NN,
    parents: readonly ParentStatus[],
    namespaceRequired: boolean,
    routeKind: RouteKind = 'HTTPRoute',
  ) =>
    poll(
      `${routeKind} ${route.namespace}/${route.name} has parents ${show(parents)}`,
      t.statusMs,
      t.pollMs,
      async () => {
        const r = await get(routeKind, route);
        const actual = routeParentsOf(r);
        if (r && actual.some((p) => stale(r, p.conditions))) return 'parent conditions not of the latest generation';
        for (const want of parents) {
          const found = actual.some(
            (a) =>
              // parentsForRouteMatch: group and kind compared as written (absent only matches absent), the namespace
              // unless it is absent and not required; the sectionName is not compared
              a.controllerName === (want.controllerName ?? CONTROLLER_NAME) &&
              a.parentRef.group === want.parentRef.group &&
              a.parentRef.kind === want.parentRef.kind &&
              a.parentRef.name === want.parentRef.name &&
              (a.parentRef.namespace === want.parentRef.namespace ||
                (!namespaceRequired && a.parentRef.namespace === undefined)) &&
              conditionsMatch(want.conditions, a.conditions),
          );
          if (!found) return `no parent like ${show(want)} in ${show(actual)}`;
        }
        return null;
      },
    );

  const listenerConditions = (gw: NN, listener: string | undefined, conditions: readonly Cond[]) =>
    poll(`Gateway ${gw.namespace}/${gw.name} listeners have ${show(conditions)}`, t.statusMs, t.pollMs, async () => {
      const g = await get('Gateway', gw);
      const listeners = (g?.status?.listeners ?? []) as { name: string; conditions?: Condition[] }[];
      if (listeners.length === 0) return 'no listener status';
      for (const l of listeners) {
        if (listener && l.name !== listener) continue;
        if (!conditionsMatch(conditions, l.conditions ?? [])) return `listener ${l.name}: ${show(l.conditions)}`;
      }
      // Go: every listener named must have been seen
      if (listener && !listeners.some((l) => l.name === listener)) return `no status for listener ${listener}`;
      return null;
    });

  /** a ListenerSet's status once its conditions are of the latest generation (Go: ConditionsHaveLatestObservedGeneration) */
  const listenerSetStatus = async (nn: NN) => {
    const ls = await get('ListenerSet', nn);
    if (!ls) return 'no such ListenerSet';
    if (stale(ls, (ls.status?.conditions ?? []) as Condition[])) return 'conditions not of the latest generation';
    return ls.status ?? {};
  };
  for (const step of steps) {
    switch (step.kind) {
      case 'apply':
        await h.apply(step.manifest);
        break;
      case 'remove':
        await h.remove(step.manifest);
        break;
      case 'podsIntoSlices': {
        const mine = h.pods.filter((p) => p.namespace === step.namespace && p.pod.startsWith(`${step.deployment}-`));
        for (const name of step.slices) {
          const slice = (await h.get('discovery.k8s.io/v1', 'EndpointSlice', step.namespace, `${name}-ip4`)) as {
            ports?: { name?: string; protocol?: string }[];
          } | null;
          if (!slice) throw new Error(`no EndpointSlice ${name}-ip4`);
          const patch = {
            ports: (slice.ports ?? []).map((p) => ({ ...p, port: mine[0]!.port })),
            endpoints: mine.map((p) => ({
              addresses: [p.ip],
              conditions: { ready: true, serving: true, terminating: false },
              targetRef: { kind: 'Pod', name: p.pod, namespace: p.namespace },
            })),
          };
          await h.kubectl.run([
            'patch',
            'endpointslice',
            `${name}-ip4`,
            '-n',
            step.namespace,
            '--type=merge',
            '-p',
            JSON.stringify(patch),
          ]);
        }
        break;
      }
      case 'namespaceReady':
        await poll(`namespace ${step.namespace} ready`, t.statusMs, t.pollMs, async () => {
          const list = await h.client.list<WithStatus>(GW, 'Gateway', step.namespace);
          for (const g of list.items) {
            if (g.metadata?.annotations?.['gateway-api/skip-this-for-readiness'] === 'true') continue;
            const conditions = (g.status?.conditions ?? []) as Condition[];
            if (stale(g, conditions)) return `Gateway ${g.metadata?.name} conditions not of the latest generation`;
            if (
              !conditionsMatch(
                [
                  { type: 'Accepted', status: 'True' },
                  { type: 'Programmed', status: 'True' },
                ],
                conditions,
              )
            )
              return `Gateway ${g.metadata?.name}: ${show(conditions)}`;
          }
          return null;
        });
        break;
      case 'latest':
        await poll(
          `${step.objectKind} ${step.object.name} conditions of the latest generation`,
          t.statusMs,
          t.pollMs,
          async () => {
            const o = await get(step.objectKind, step.object);
            if (!o) return 'not found';
            const conditions =
              step.objectKind === 'HTTPRoute'
                ? routeParentsOf(o).flatMap((p) => p.conditions)
                : ((o.status?.conditions ?? []) as Condition[]);
            return stale(o, conditions) ? show(conditions) : null;
          },
        );
        break;
      case 'gatewayClassAccepted':
        await poll(`GatewayClass ${step.name} has an Accepted condition`, t.statusMs, t.pollMs, async () => {
          const o = await get('GatewayClass', { namespace: '', name: step.name });
          const conditions = (o?.status?.conditions ?? []) as Condition[];
          if (!o || stale(o, conditions)) return `not of the latest generation: ${show(conditions)}`;
          return conditionsMatch([{ type: 'Accepted' }], conditions) ? null : show(conditions);
        });
        break;
      case 'policyCondition':
        await poll(
          `BackendTLSPolicy ${step.policy.namespace}/${step.policy.name} has ${show(step.condition)} for ${step.gateway.name}`,
          t.statusMs,
          t.pollMs,
          async () => {
            const p = await get('BackendTLSPolicy', step.policy);
            if (!p) return 'not found';
            const ancestors = (p.status?.ancestors ?? []) as {
              ancestorRef: { name: string; namespace?: string };
              conditions: Condition[];
            }[];
            for (const a of ancestors) {
              if (stale(p, a.conditions)) return 'ancestor conditions not of the latest generation';
              const ref = a.ancestorRef;
              const ours =
                ref.name === step.gateway.name &&
                (ref.namespace === undefined || ref.namespace === step.gateway.namespace);
              if (ours && conditionsMatch([step.condition], a.conditions)) return null;
            }
            return show(ancestors);
          },
        );
        break;
      case 'policyLatest': {
        const p = await get('BackendTLSPolicy', step.policy);
        if (!p) throw new Error(`BackendTLSPolicy ${step.policy.name} not found`);
        for (const a of (p.status?.ancestors ?? []) as { conditions: Condition[] }[])
          if (stale(p, a.conditions)) throw new Error(`conditions not of the latest generation: ${show(a.conditions)}`);
        break;
      }
      case 'client':
        await step.run(h, t);
        break;
      case 'mutate': {
        const before = await get(step.objectKind, step.object);
        if (!before) throw new Error(`${step.objectKind} ${step.object.name} not found`);
        const resource = { Gateway: 'gateways', GatewayClass: 'gatewayclasses', HTTPRoute: 'httproutes' }[
          step.objectKind
        ];
        await h.kubectl.run([
          'patch',
          `${resource}.gateway.networking.k8s.io`,
          step.object.name,
          ...(step.object.namespace ? ['-n', step.object.namespace] : []),
          '--type=merge',
          '-p',
          JSON.stringify(step.patch(before as { spec?: Record<string, unknown> })),
        ]);
        const after = await get(step.objectKind, step.object);
        if (after?.metadata?.generation === before.metadata?.generation)
          throw new Error(`generation should change after an update (still ${before.metadata?.generation})`);
        break;
      }
      case 'weights': {
        const target = await gatewayTarget(step.gateway, undefined, 'http');
        await expectEventually(target, step.expected, t);
        await distributionWithin(httpSample(target, step.expected), step.weights);
        break;
      }
      case 'grpcWeights': {
        const target = await gatewayTarget(step.gateway, undefined, 'http');
        await expectGrpcEventually(target, { method: 'Echo', namespace: step.namespace }, t);
        const client = new GrpcEchoClient(
          `${target.address}:${target.port}`,
          grpc.credentials.createInsecure(),
          OWN_CONNECTION,
        );
        try {
          await distributionWithin(grpcSample(client), step.weights);
        } finally {
          client.close();
        }
        break;
      }
      case 'websocket': {
        const target = await gatewayTarget(step.gateway, undefined, 'http');
        await converge('websocket round trip', t, () => webSocketEcho(target, step.origin));
        break;
      }
      case 'headerNamesPod': {
        const target = await gatewayTarget(step.gateway, undefined, 'http');
        await expectEventually(target, step.expected, t);
        for (let i = 0; i < step.times; i++) {
          const got = await send(target, step.expected.request, {});
          const echo = JSON.parse(got.body) as { pod: string; headers?: Record<string, string[]> };
          const values = Object.entries(echo.headers ?? {}).find(
            ([k]) => k.toLowerCase() === step.header.toLowerCase(),
          );
          if (values?.[1].length !== 1)
            throw new Error(
              `expected a single '${step.header}' header to have been set, got ${values?.[1].length ?? 0}`,
            );
          if (!echo.pod.startsWith(values[1][0]!))
            throw new Error(`the backendRef's headers went to pod ${echo.pod}, want ${values[1][0]}…`);
        }
        break;
      }
      case 'mirrorShares': {
        const target = await gatewayTarget(step.gateway, undefined, 'http');
        for (const c of step.cases) await mirrorShare(h, target, c, t);
        break;
      }
      case 'delete':
        await h.kubectl.run(['delete', step.resource, step.name, '-n', step.namespace]);
        break;
      case 'tlsRejected': {
        const target = await gatewayTarget(step.gateway, step.listener, 'https');
        // Go's isConnectionRejected: the dial fails (reset, EOF) rather than completing a handshake
        await poll(`a TLS connection for ${step.serverName} is rejected`, t.maxMs, t.delayMs, () =>
          tlsDialFails(target.address, target.port, step.serverName).then((failed) =>
            failed ? null : 'the handshake completed',
          ),
        );
        break;
      }
      case 'accepted': {
        await gatewayTarget(step.gateway, step.listeners?.[0], 'http');
        const sections = step.listeners && step.listeners.length > 0 ? step.listeners : [undefined];
        for (const route of step.routes)
          await routeParents(
            route,
            sections.map((sectionName) => ({
              parentRef: {
                group: 'gateway.networking.k8s.io',
                kind: 'Gateway',
                name: step.gateway.name,
                namespace: step.gateway.namespace,
                ...(sectionName ? { sectionName } : {}),
              },
              conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted' }],
            })),
            route.namespace !== step.gateway.namespace,
            step.routeKind,
          );
        const ready: Cond[] = [
          { type: 'ResolvedRefs', status: 'True' },
          { type: 'Accepted', status: 'True' },
          { type: 'Programmed', status: 'True' },
        ];
        await listenerConditions(step.gateway, undefined, ready);
        break;
      }
      case 'routeCondition':
        await poll(
          `${step.routeKind ?? 'HTTPRoute'} ${step.route.namespace}/${step.route.name} has ${show(step.condition)} from ${step.gateway.name}`,
          t.statusMs,
          t.pollMs,
          async () => {
            const r = await get(step.routeKind ?? 'HTTPRoute', step.route);
            const parents = routeParentsOf(r);
            if (r && parents.some((p) => stale(r, p.conditions)))
              return 'parent conditions not of the latest generation';
            const hit = parents.some(
              (p) =>
                p.parentRef.name === step.gateway.name &&
                (p.parentRef.namespace === undefined || p.parentRef.namespace === step.gateway.namespace) &&
                p.conditions.some((c) => matches(c, step.condition)),
            );
            return hit ? null : `parents: ${show(parents)}`;
          },
        );
        break;
      case 'routeParents':
        await routeParents(step.route, step.parents, step.namespaceRequired, step.routeKind);
        break;
      case 'routeNoAcceptedParents': {
        let emptySeen = false;
        await poll(
          `${step.routeKind ?? 'HTTPRoute'} ${step.route.namespace}/${step.route.name} has no accepted parents`,
          t.statusMs,
          t.pollMs,
          async () => {
            const r = await get(step.routeKind ?? 'HTTPRoute', step.route);
            const parents = routeParentsOf(r);
            if (parents.length === 0) {
              // Go checks an empty list twice, a second apart, before it believes it
              if (!emptySeen) {
                emptySeen = true;
                return 'empty once';
              }
              return null;
            }
            if (parents.length > 1) return `${parents.length} parents`;
            if (r && stale(r, parents[0]!.conditions)) return 'not of the latest generation';
            return conditionsMatch([{ type: 'Accepted', status: 'False' }], parents[0]!.conditions)
              ? null
              : `conditions ${show(parents[0]!.conditions)}`;
          },
        );
        break;
      }
      case 'gatewayListeners':
        await poll(
          `Gateway ${step.gateway.namespace}/${step.gateway.name} listener status`,
          t.statusMs,
          t.pollMs,
          async () => {
            const g = await get('Gateway', step.gateway);
            // Go: ConditionsHaveLatestObservedGeneration on the Gateway's conditions first
            if (g && stale(g, (g.status?.conditions ?? []) as Condition[]))
              return 'Gateway conditions not of the latest generation';
            return listenersDiffer(step.listeners, (g?.status?.listeners ?? []) as EntryStatus[]);
          },
        );
        break;
      case 'gatewayZeroRoutes':
        await poll(
          `Gateway ${step.gateway.namespace}/${step.gateway.name} has no routes`,
          t.statusMs,
          t.pollMs,
          async () => {
            const g = await get('Gateway', step.gateway);
            if (!g) return 'no such Gateway';
            if (stale(g, (g.status?.conditions ?? []) as Condition[])) return 'not of the latest generation';
            const listeners = (g.status?.listeners ?? []) as { attachedRoutes: number }[];
            return listeners.length === 0 || (listeners.length === 1 && listeners[0]!.attachedRoutes === 0)
              ? null
              : show(listeners);
          },
        );
        break;
      case 'gatewayAddresses':
        await poll(
          `Gateway ${step.gateway.namespace}/${step.gateway.name} has status.addresses ${show(step.addresses)}`,
          t.statusMs,
          t.pollMs,
          async () => {
            const g = await get('Gateway', step.gateway);
            const addresses = ((g?.status?.addresses ?? []) as { type?: string; value?: string }[]).map((a) => ({
              type: a.type ?? 'IPAddress',
              value: a.value,
            }));
            return JSON.stringify(addresses) === JSON.stringify(step.addresses) ? null : show(addresses);
          },
        );
        break;
      case 'gatewayCondition':
        await poll(
          `Gateway ${step.gateway.namespace}/${step.gateway.name} has ${show(step.condition)}`,
          t.statusMs,
          t.pollMs,
          async () => {
            const g = await get('Gateway', step.gateway);
            const conditions = (g?.status?.conditions ?? []) as Condition[];
            if (g && stale(g, conditions)) return 'not of the latest generation';
            return conditionsMatch([step.condition], conditions) ? null : show(conditions);
          },
        );
        break;
      case 'listenerConditions':
        await listenerConditions(step.gateway, step.listener, step.conditions);
        break;
      case 'requests': {
        const target = await gatewayTarget(step.gateway, step.listener, step.scheme ?? 'http');
        // Go runs the cases as parallel subtests (t.Parallel), each to its own verdict
        const verdicts = await Promise.allSettled(
          step.cases.map((c) => (c.mirroredTo ? expectMirrored(h, target, c, t) : expectEventually(target, c, t))),
        );
        const failures = verdicts.flatMap((v, i) =>
          v.status === 'rejected' ? [`#${i} ${(v.reason as Error).message}`] : [],
        );
        if (failures.length > 0) throw new Error(failures.join('\n'));
        break;
      }
      case 'grpcRequests': {
        const target = await gatewayTarget(step.gateway, undefined, 'http');
        const verdicts = await Promise.allSettled(step.cases.map((c) => expectGrpcEventually(target, c, t)));
        const failures = verdicts.flatMap((v, i) =>
          v.status === 'rejected' ? [`#${i} ${(v.reason as Error).message}`] : [],
        );
        if (failures.length > 0) throw new Error(failures.join('\n'));
        break;
      }
      case 'attachedListenerSets':
        await poll(
          `Gateway ${step.gateway.namespace}/${step.gateway.name} has ${step.count} attached ListenerSets`,
          t.statusMs,
          t.pollMs,
          async () => {
            const g = await get('Gateway', step.gateway);
            if (!g) return 'no such Gateway';
            if (stale(g, (g.status?.conditions ?? []) as Condition[])) return 'not of the latest generation';
            const count = (g.status?.attachedListenerSets as number | undefined) ?? 0;
            return count === step.count ? null : `attachedListenerSets ${count}`;
          },
        );
        break;
      case 'listenerSetCondition':
        await poll(
          `ListenerSet ${step.listenerSet.namespace}/${step.listenerSet.name} has ${show(step.condition)}`,
          t.statusMs,
          t.pollMs,
          async () => {
            const status = await listenerSetStatus(step.listenerSet);
            if (typeof status === 'string') return status;
            const conditions = (status.conditions ?? []) as Condition[];
            return conditionsMatch([step.condition], conditions) ? null : show(conditions);
          },
        );
        break;
      case 'listenerSetListeners':
        await poll(
          `ListenerSet ${step.listenerSet.namespace}/${step.listenerSet.name} listener status`,
          t.statusMs,
          t.pollMs,
          async () => {
            const status = await listenerSetStatus(step.listenerSet);
            if (typeof status === 'string') return status;
            return listenersDiffer(step.listeners, (status.listeners ?? []) as EntryStatus[]);
          },
        );
        break;
      case 'listenerSetListenerConditions':
        await poll(
          `ListenerSet ${step.listenerSet.namespace}/${step.listenerSet.name} listeners have ${show(step.conditions)}`,
          t.statusMs,
          t.pollMs,
          async () => {
            const status = await listenerSetStatus(step.listenerSet);
            if (typeof status === 'string') return status;
            const named = step.listeners ?? [];
            const unseen = new Set(named);
            for (const l of (status.listeners ?? []) as EntryStatus[]) {
              if (named.length > 0 && !named.includes(l.name)) continue;
              if (!conditionsMatch(step.conditions, l.conditions ?? []))
                return `listener ${l.name}: ${show(l.conditions)}`;
              unseen.delete(l.name);
            }
            return unseen.size === 0 ? null : `no status for listeners ${[...unseen].join(', ')}`;
          },
        );
        break;
      case 'failures': {
        const target = await gatewayTarget(step.gateway, undefined, 'http');
        for (const c of step.cases) await expectFailure(target, c, t);
        break;
      }
    }
  }
}
