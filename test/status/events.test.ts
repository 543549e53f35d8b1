/**
 * EventRecorder against the test API server: an Event per new problem on the Ingress it is
 * about, nothing for problems that persist, one Event counted up when a problem comes back
 * (from this replica, or from the next leader that never saw it), a per-Ingress rate limit,
 * and no key material in messages.
 */
import { CoreV1Api, KubeConfig, type CoreV1Event, type KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { ClusterCache } from '../../src/kube/cache.js';
import { EventRecorder, eventName, reasonFor, reportFor, scrubMessage } from '../../src/kube/events.js';
import type { Problem } from '../../src/model/nginx-model.js';
import { ingress } from '../support/manifests.js';

const EVENTS = findResourceByKind('v1', 'Event')!;
const INGRESSES = findResourceByKind('networking.k8s.io/v1', 'Ingress')!;
let api: ApiServer;
let cache: ClusterCache;
let core: CoreV1Api;
const requests: string[] = [];

beforeEach(async () => {
  requests.length = 0;
  api = await startApiServer({
    seed: [ingress('web', { 'web.example.com': [{ path: '/', service: 'missing' }] })] as never,
    onRequest: ({ method, url, status }) => url.includes('/events') && requests.push(`${method} ${status}`),
  });
  const kc = new KubeConfig();
  kc.loadFromString(api.kubeconfigText);
  core = kc.makeApiClient(CoreV1Api);
  cache = new ClusterCache();
  cache.upsert('Ingress', api.registry.get(INGRESSES, 'default', 'web') as KubernetesObject);
});
afterEach(async () => api?.close());

const problem = (message: string, field = 'spec.rules[0].http.paths[0].backend.service.name'): Problem => ({
  kind: 'Ingress',
  namespace: 'default',
  name: 'web',
  field,
  message,
});
const recorder = (clock = { now: 1_800_000_000_000 }, instance = 'replica-a') =>
  new EventRecorder({
    core,
    cache,
    log: pino({ level: 'silent' }),
    instance,
    now: () => clock.now,
    burst: 3,
    refillMs: 30_000,
  });
const events = () => api.registry.list(EVENTS, { namespace: 'default' }).items as unknown as CoreV1Event[];

describe('EventRecorder', () => {
  it('reports a new problem once, on its Ingress, as a Warning', async () => {
    const r = recorder();
    const missing = problem('Service default/missing not found; answering 503');
    expect(await r.record([missing])).toEqual({ created: 1, counted: 0, limited: 0 });
    expect(await r.record([missing])).toEqual({ created: 0, counted: 0, limited: 0 });
    const [event] = events();
    expect(event).toMatchObject({
      type: 'Warning',
      reason: 'InvalidBackend',
      message: 'spec.rules[0].http.paths[0].backend.service.name: Service default/missing not found; answering 503',
      count: 1,
      involvedObject: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        namespace: 'default',
        name: 'web',
        uid: cache.list('Ingress')[0]!.metadata!.uid,
      },
      source: { component: 'ingress-actors', host: 'replica-a' },
      reportingComponent: 'ingress-actors',
      reportingInstance: 'replica-a',
    });
    expect(requests).toEqual(['POST 201']);
  });

  it('counts a problem that comes back on the same Event, also from a replica that never saw it', async () => {
    const clock = { now: 1_800_000_000_000 };
    const r = recorder(clock);
    const p = problem('Service default/missing not found; answering 503');
    await r.record([p]);
    await r.record([]); // fixed
    clock.now += 60_000;
    expect(await r.record([p])).toEqual({ created: 0, counted: 1, limited: 0 }); // broken again
    const next = recorder(clock, 'replica-b'); // the next leader
    expect(await next.record([p])).toEqual({ created: 0, counted: 1, limited: 0 });
    const all = events();
    expect(all).toHaveLength(1);
    expect(all[0]!.count).toBe(3);
    expect(new Date(String(all[0]!.lastTimestamp)).getTime()).toBe(clock.now);
    expect(requests).toEqual(['POST 201', 'PATCH 200', 'POST 409', 'GET 200', 'PATCH 200']);
  });

  it(
    'one Event lists all the problems of an Ingress; the same set again is that Event counted up, a changed set a ' +
      'new one',
    async () => {
      const clock = { now: 1_800_000_000_000 };
      const r = recorder(clock);
      const three = [
        problem('Service default/missing not found; answering 503'),
        problem('"a b" is not a host name; rule left out', 'spec.rules[1].host'),
        problem(
          'is not an annotation this controller knows; ignored',
          'metadata.annotations.nginx.ingress.kubernetes.io/rewrite-targt',
        ),
      ];
      expect(await r.record(three)).toEqual({ created: 1, counted: 0, limited: 0 });
      // same set, any order
      expect(await r.record([...three].reverse())).toEqual({ created: 0, counted: 0, limited: 0 });
      const [event] = events();
      expect(event!.reason).toBe('InvalidIngress');
      expect(event!.message).toBe(
        '3 problems: (1) metadata.annotations.nginx.ingress.kubernetes.io/rewrite-targt: is not an annotation this ' +
          'controller knows; ignored' +
          ' (2) spec.rules[0].http.paths[0].backend.service.name: Service default/missing not found; answering 503' +
          ' (3) spec.rules[1].host: "a b" is not a host name; rule left out',
      );
      expect(await r.record(three.slice(0, 2))).toEqual({ created: 1, counted: 0, limited: 0 }); // one fixed: a new set
      expect(await r.record(three)).toEqual({ created: 0, counted: 1, limited: 0 }); // broken again: counted up
      expect(events()).toHaveLength(2);
      expect(events().find((e) => e.message!.startsWith('3 problems'))!.count).toBe(2);
    },
  );

  it(
    'rate-limits per Ingress: a burst of changed sets, then ' + 'one per refill period; a held-back set comes later',
    async () => {
      const clock = { now: 1_800_000_000_000 };
      const r = recorder(clock);
      const upTo = (n: number) =>
        Array.from({ length: n }, (_, i) => problem(`path ${i} refused`, `spec.rules[0].http.paths[${i}].path`));
      for (const n of [1, 2, 3]) expect(await r.record(upTo(n))).toEqual({ created: 1, counted: 0, limited: 0 });
      expect(await r.record(upTo(4))).toEqual({ created: 0, counted: 0, limited: 1 });
      expect(await r.record(upTo(5))).toEqual({ created: 0, counted: 0, limited: 1 });
      clock.now += 30_000;
      expect(await r.record(upTo(5))).toEqual({ created: 1, counted: 0, limited: 0 });
      expect(await r.record(upTo(5))).toEqual({ created: 0, counted: 0, limited: 0 });
      expect(events().map((e) => e.message!.slice(0, 11))).toEqual(
        expect.arrayContaining(['spec.rules[', '2 problems:', '3 problems:', '5 problems:']),
      );
      expect(events()).toHaveLength(4);
    },
  );

  it('keeps the count of problems when they do not all fit in one Event', () => {
    const many = Array.from({ length: 40 }, (_, i) =>
      problem(`${'x'.repeat(60)} ${i}`, `spec.rules[0].http.paths[${String(i).padStart(2, '0')}].path`),
    );
    const { message, reason } = reportFor(many);
    expect(reason).toBe('InvalidPath');
    expect(message.length).toBeLessThanOrEqual(1024);
    expect(message).toMatch(/^40 problems: \(1\) spec\.rules\[0\]\.http\.paths\[00\]\.path: x+ 0 /);
    expect(message).toMatch(/ … and \d+ more$/);
    const shown = message.match(/\((\d+)\) /g)!.length;
    expect(message.endsWith(`… and ${40 - shown} more`)).toBe(true);
  });

  it('ignores problems of other kinds and of Ingresses it does not know', async () => {
    const r = recorder();
    const secret: Problem = {
      kind: 'Secret',
      namespace: 'default',
      name: 'tls',
      field: '--default-ssl-certificate',
      message: 'x',
    };
    expect(await r.record([secret, { ...problem('y'), name: 'gone' }])).toEqual({ created: 0, counted: 0, limited: 0 });
  });

  it('never sends key material: PEM blocks and long base64 runs are removed, control characters too', async () => {
    const pem =
      '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----';
    const blob = 'A'.repeat(80);
    expect(scrubMessage(`bad key ${pem} and ${blob}\nend`)).toBe('bad key [PEM data removed] and [data removed] end');
    expect(scrubMessage('long words '.repeat(200))).toHaveLength(1024);
    await recorder().record([problem(`tls.key ${pem}`, 'spec.tls[0].secretName')]);
    expect(JSON.stringify(events())).not.toContain('MIIEvQ');
  });

  it('names reasons by field, and Events by Ingress and a hash of what they say', () => {
    expect(reasonFor(problem('x', 'spec.tls[0].secretName'))).toBe('InvalidTLS');
    expect(reasonFor(problem('x', 'spec.rules[0].host'))).toBe('InvalidHost');
    expect(reasonFor(problem('x', 'spec.rules[0].http.paths[0].pathType'))).toBe('InvalidPath');
    expect(
      reasonFor(problem('is already served by Ingress default/old; path left out', 'spec.rules[0].http.paths[0].path')),
    ).toBe('Conflict');
    expect(reasonFor(problem('x', 'metadata.annotations.nginx.ingress.kubernetes.io/rewrite-target'))).toBe(
      'InvalidAnnotation',
    );
    expect(eventName('web', 'InvalidPath', 'm')).toMatch(/^web\.[0-9a-f]{16}$/);
    expect(eventName('x'.repeat(253), 'R', 'm').length).toBeLessThanOrEqual(253);
  });
});
