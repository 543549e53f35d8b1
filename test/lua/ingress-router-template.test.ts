/**
 * The Ingress path router against the nginx.conf the controller renders today, whole: Ingresses whose every path
 * has a Service of its own (a pod answering its name) are built with the Lua balancer, rendered with the real
 * template, and served by a real nginx with the pushed tables. Each request's answer there (the pod, a redirect or a
 * status) must be what the location the Lua router picks (ingressRouteTable of the same model) would answer: its
 * Service, nginx's auto_redirect, or its status. ingress-router.test.ts proves the pick location by location; this
 * proves the rendered file holds the locations the route table is made from, in its order.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { ingressRouteTable } from '../../src/model/ingress-routes.js';
import type { Server } from '../../src/model/nginx-model.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { luaFolder, type RunningNginx, startNginx } from '../support/nginx.js';
import { type Pod, startPod } from './harness.js';
import { AUTH_URL, answer, ROUTER_CASES, type RouterNginx, startRouterNginx } from './ingress-router-nginx.js';

/** The cases of ingress-router.test.ts, auth-url aside: its auth service does not run here. */
const CASES = ROUTER_CASES.filter((c) => c.annotations?.[AUTH_URL] === undefined);
const HOSTS = ['plain.test', 'nofallback.test', 'regex.test', 'a.wild.test', 'b.wild.test', 'b.c.wild.test', 'x.test'];
const URIS = [
  '/',
  '/foo',
  '/foo/',
  '/foobar',
  '/foo/bar',
  '/foo/bar/baz',
  '/FOO',
  '/foo.bar/x',
  '/api',
  '/api/v1/x',
  '/Api',
  '/API',
  '/app',
  '/App/V2',
  '/app/v2',
  '/app/exact',
  '/APP/EXACT',
  '/STATIC/A.CSS',
  '/st/x',
  '/stx',
  '/w',
  '/wx',
  '/a',
  '/dir',
  '/dir?a=1',
  '/dir/',
  '/dir/x',
];

let pods: Pod[] = [];
let dir = '';
let nginx: RunningNginx | undefined;
let router: RouterNginx | undefined;
let servers: Server[] = [];
let port = 0;

beforeAll(async () => {
  // one Service and pod per path, named s<n>, so the pod that answers names the route
  let n = 0;
  const ingresses = CASES.map((c, i) =>
    ingress(
      `i${i}`,
      { [c.host]: c.paths.map((path) => ({ ...path, service: `s${n++}` })) },
      { annotations: c.annotations ?? {} },
    ),
  );
  pods = await Promise.all(Array.from({ length: n }, (_, i) => startPod(`s${i}`, '127.0.0.2')));
  const folder = await luaFolder('ia-ingress-router-');
  dir = folder.dir;
  port = await freePort();
  const options = {
    ...defaultBuildOptions,
    httpPort: port,
    httpsPort: await freePort(),
    listenAddress: '127.0.0.1',
    dynamic: folder.dynamic,
  };
  const services = pods.flatMap((pod) =>
    serviceWithEndpoints(pod.name, [{ ip: pod.peer.address, port: pod.peer.port }]),
  );
  const result = buildModel(snapshotOf([ingressClass(), ...services, ...ingresses]), options);
  expect(result.problems).toEqual([]);
  const { model, tables } = new DynamicSplit().split(result.model);
  await writeConfigSet(dir, render(model, await loadTemplate()), model.certificates);
  nginx = await startNginx(dir, port);
  expect((await folder.control.pushBackends(tables.backends)).refused).toEqual([]);
  servers = [model.defaultServer, ...model.servers];
  router = await startRouterNginx(servers, ingressRouteTable(model));
}, 60_000);

afterAll(async () => {
  await router?.stop();
  await nginx?.stop();
  await Promise.all(pods.map((pod) => pod.close()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** served is what the controller's nginx answers: the pod's name, a redirect's path, or the status. */
function served(host: string, path: string): Promise<string> {
  return answer(port, host, path, (body) => `backend ${(JSON.parse(body) as { backend: string }).backend}`);
}

/** routed is what the location the Lua router picks answers: its Service's pod, or its status. */
async function routed(host: string, path: string): Promise<string> {
  const pick = await answer(router!.luaPort, host, path);
  if (!/^\S+ \d+$/.test(pick)) return pick;
  const [name, index] = pick.split(' ');
  const l = servers.find((s) => s.host === name)!.locations[Number(index)]!;
  if (l.pass) return `backend ${l.route?.serviceName ?? '?'}`;
  return `status ${l.status ?? '?'}`;
}

describe('the Lua router against the rendered nginx.conf', () => {
  test('every host and URI is answered by the location the router picks', async () => {
    const found: { host: string; uri: string; nginx: string; router: string }[] = [];
    const answers = new Set<string>();
    for (const host of HOSTS)
      for (const uri of URIS) {
        const [a, b] = await Promise.all([served(host, uri), routed(host, uri)]);
        answers.add(a);
        if (a !== b) found.push({ host, uri, nginx: a, router: b });
      }
    expect(found).toEqual([]);
    // the requests reached every route, and nginx's redirect and default answers
    expect([...answers].filter((a) => a.startsWith('backend ')).sort()).toEqual(
      pods.map((pod) => `backend ${pod.name}`).sort(),
    );
    expect(answers).toContain('status 404');
    expect(answers).toContain('redirect /dir/');
    expect(answers).toContain('redirect /dir/?a=1');
  });
});
