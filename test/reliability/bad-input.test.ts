/**
 * Bad input: hostile objects (fast-check, see hostile.ts) written through the API server over
 * HTTPS, in batches, with the request loop on the good Ingresses running. For every config nginx
 * applies: no directive the template did not write. After each batch: the controller still runs
 * (no child restarted, no sync failed, no config built from what the validators let through was
 * refused by nginx -t), the good Ingresses were served all along, and the controller converges to
 * render(buildModel(the API server's objects)), hostile ones included, and serves the next change.
 */
import { Agent, request } from 'node:https';
import fc from 'fast-check';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { readTemplateSources, DEFAULT_TEMPLATE } from '../../src/render/load.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { foreignDirectives, templateDirectives } from '../support/nginx-conf.js';
import { queueIdle, waitFor } from '../support/cluster.js';
import { apiSnapshot } from './expected.js';
import { Harness } from './harness.js';
import { HOSTILE_NAMESPACE, hostileOps, pems, type HostileOp } from './hostile.js';
import { knownBugOfReloadError } from './known-bugs.js';
import { profile } from './profile.js';

const BATCH = profile.name === 'full' ? 1_000 : 200;
/** ops between two checks of the state they leave */
const GROUP = 20;
const SEED = Number(process.env.RELIABILITY_SEED ?? 20_240_607);
const COLLECTIONS: Record<string, string> = {
  Ingress: '/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses',
  Service: '/api/v1/namespaces/{ns}/services',
  EndpointSlice: '/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices',
  Secret: '/api/v1/namespaces/{ns}/secrets',
  ConfigMap: '/api/v1/namespaces/{ns}/configmaps',
};

let h: Harness;
let agent: Agent;
const allowed = templateDirectives(
  Object.values(await readTemplateSources(DEFAULT_TEMPLATE)).flatMap((v) =>
    typeof v === 'string' ? [v] : Object.values(v),
  ),
);
/** Every distinct config nginx applied, checked for foreign directives as it comes. */
const applied = new Set<string>();
const foreign: string[] = [];

beforeAll(async () => {
  h = await Harness.start({
    name: 'bad-input',
    seed: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: HOSTILE_NAMESPACE } }],
  });
  agent = new Agent({ keepAlive: true, maxSockets: 8 });
  for (let i = 0; i < 4; i++) {
    const pair = await issueCertificate({ commonName: `h-${i}.example.org`, dnsNames: [`h-${i}.example.org`] });
    pems.push({ cert: pair.certPem, key: pair.keyPem });
  }
  h.cluster.controller.root.system.inspect((event: InspectionEvent) => {
    if (event.type !== '@xstate.snapshot' || (event.actorRef as AnyActorRef).id !== 'nginx') return;
    const text = (event.snapshot as { context?: { applied?: { config: string } | null } }).context?.applied?.config;
    if (!text || applied.has(text)) return;
    applied.add(text);
    try {
      const found = foreignDirectives(text, allowed);
      if (found.length > 0)
        foreign.push(
          found
            .map((d) => `${[...d.context, d.name].join(' > ')} ${d.args.join(' ')}`)
            .join('; ')
            .slice(0, 300),
        );
    } catch (error) {
      foreign.push(`unparsable config applied: ${(error as Error).message}`);
    }
  });
}, 120_000);
afterAll(async () => {
  agent?.destroy();
  await h?.close();
}, 60_000);

function send(method: string, path: string, body?: object): Promise<number> {
  const api = h.cluster.api;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: api.port,
        path,
        method,
        agent,
        ca: api.caPem,
        headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' },
      },
      (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)),
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** apply writes one op through the API server (create, or replace when it exists) and returns the HTTP status. */
async function apply(op: HostileOp): Promise<number> {
  if (op.op === 'delete')
    return send('DELETE', `${COLLECTIONS[op.kind]!.replace('{ns}', HOSTILE_NAMESPACE)}/${encodeURIComponent(op.name)}`);
  const { kind, metadata } = op.object;
  const collection = COLLECTIONS[kind]!.replace('{ns}', metadata.namespace);
  const created = await send('POST', collection, op.object);
  return created === 409 ? send('PUT', `${collection}/${encodeURIComponent(metadata.name)}`, op.object) : created;
}

/**
 * unblock empties the ConfigMap (the only object a known bug lets block every later config) and
 * waits for convergence: null when that converged, else why not.
 */
async function unblock(): Promise<string | null> {
  await send('PUT', '/api/v1/namespaces/default/configmaps/ingress-config', {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'ingress-config', namespace: 'default' },
    data: {},
  });
  const result = await h.waitConverged(20_000);
  return typeof result === 'number' ? null : `still not converged after the ConfigMap was emptied: ${result}`;
}

it(`survives ${profile.hostileObjects} hostile objects through the API server`, async () => {
  const ops = fc.sample(hostileOps({ namespace: 'default', name: 'ingress-config' }), {
    numRuns: profile.hostileObjects,
    seed: SEED,
  });
  const statuses = new Map<number, number>();
  const reloadErrors = new Set<string>();
  let lastFailed = h.nginxContext().reloadsFailed;
  let states = 0;
  const knownHits = new Map<string, string[]>();
  for (let from = 0; from < ops.length; from += BATCH) {
    const batch = ops.slice(from, from + BATCH);
    const before = {
      restarts: { ...h.childRestarts() },
      syncsFailed: h.cluster.actor('syncQueue')!.context.syncsFailed as number,
      foreign: foreign.length,
    };
    const fault = h.begin(`hostile objects (batches of ${BATCH})`);
    for (let g = 0; g < batch.length; g += GROUP) {
      // Four writers at once; each op waits for its answer, so the count is exact.
      const group = batch.slice(g, g + GROUP);
      for (let i = 0; i < group.length; i += 4) {
        const codes = await Promise.all(group.slice(i, i + 4).map(apply));
        for (const code of codes) statuses.set(code, (statuses.get(code) ?? 0) + 1);
      }
      // The config this state implies, checked at once (syncs coalesce, so not every state is served) …
      states++;
      try {
        const found = foreignDirectives(h.expected(), allowed);
        if (found.length > 0)
          foreign.push(
            `in render(buildModel(API state)) after op ${from + g + group.length}: ${found
              .map((d) => `${d.name} ${d.args.join(' ')}`)
              .join('; ')
              .slice(0, 300)}`,
          );
      } catch (error) {
        foreign.push(
          `render(buildModel(API state)) after op ${from + g + group.length} ` +
            `failed or does not parse: ${(error as Error).message}`,
        );
      }
      // … and the controller given time to serve it, so that many distinct configs are applied.
      await waitFor(
        'the sync queue idle',
        () => queueIdle(h.cluster.actor('syncQueue')?.value) && h.nginxState() === '{"alive":"running"}',
        5_000,
        10,
      ).catch(() => undefined);
      const n = h.nginxContext();
      if (n.reloadsFailed > lastFailed) {
        const error = String(n.lastReloadError).split('\n').slice(1).join(' ').slice(0, 300);
        const bug = knownBugOfReloadError(error);
        if (bug) {
          // A known bug: note it, and reset the ConfigMap so that it does not hide the rest.
          knownHits.set(bug, [...(knownHits.get(bug) ?? []), error]);
          const unblocked = await unblock();
          if (unblocked !== null) reloadErrors.add(unblocked);
        } else reloadErrors.add(error);
        lastFailed = h.nginxContext().reloadsFailed;
      }
    }
    // A good change after the batch: the controller must still apply changes, not only survive.
    await h.change('client');
    const failures: string[] = [];
    if (foreign.length > before.foreign)
      failures.push(`foreign directives served: ${foreign.slice(before.foreign).join(' | ')}`);
    const restarted = Object.entries(h.childRestarts()).filter(([id, n]) => n > (before.restarts[id] ?? 0));
    if (restarted.length > 0) failures.push(`children restarted: ${restarted.map(([id]) => id).join(', ')}`);
    const syncsFailed = (h.cluster.actor('syncQueue')!.context.syncsFailed as number) - before.syncsFailed;
    if (syncsFailed > 0)
      failures.push(`${syncsFailed} syncs failed, last: ${String(h.cluster.actor('syncQueue')!.context.lastError)}`);
    if (reloadErrors.size > 0)
      failures.push(`nginx -t refused a config built from validated input: ${[...reloadErrors].join(' | ')}`);
    reloadErrors.clear();
    await fault.end(20_000, {
      ...(failures.length ? { failure: failures.join('; ') } : {}),
      detail: `objects ${from + 1}-${from + batch.length}`,
    });
  }
  const { model, problems } = buildModel(apiSnapshot(h.cluster.api, h.cluster.config), h.cluster.config.build);
  const accepted = [...statuses].filter(([code]) => code >= 200 && code < 300).reduce((s, [, n]) => s + n, 0);
  h.notes.push(
    `bad input: ${ops.length} hostile ops (seed ${SEED}), API server answered ${[...statuses]
      .sort(([a], [b]) => a - b)
      .map(([c, n]) => `${c}×${n}`)
      .join(', ')}; ` +
      `${states} API states rendered and ${applied.size} ` +
      'distinct configs applied, each checked for foreign directives; ' +
      `at the end ${model.servers.length} servers and ${model.upstreams.length} upstreams from the surviving ` +
      `objects, ${problems.length} problems reported`,
  );
  for (const [bug, errors] of knownHits) {
    h.knownBugsSeen.add(bug);
    h.notes.push(
      `bad input: known bug ${bug} hit ${errors.length} times (the ConfigMap was emptied each time), e.g. ${errors[0]}`,
    );
  }
  if (process.env.RELIABILITY_STRICT === '1') expect([...knownHits.keys()]).toEqual([]);
  // Most must get through the API server, or the controller's validators were not tested.
  expect(accepted).toBeGreaterThan(ops.length / 2);
  h.expectSurvived();
});
