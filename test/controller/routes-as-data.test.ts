/**
 * Routes as data through the whole controller (its own process, real nginx): with `--routes-as-data=true` it boots
 * (the boot config renders the default server as the shared one, as every sync does), serves an Ingress host from the
 * pushed table, and serves a backend change by a push, without a reload.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startChildController, type ChildController } from '../../bench/child-controller.js';
import { waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';

let controller: ChildController;
const backends: Backend[] = [];

const answer = async () =>
  (await get({ host: 'shared.example.com', path: '/', port: controller.httpPort }).catch(() => null))?.backend;
const logged = (text: string) => controller.logs.filter((line) => line.msg === text);

beforeAll(async () => {
  backends.push(await startBackend('one'), await startBackend('two'));
  controller = await startChildController(
    [
      ingressClass(),
      ...serviceWithEndpoints('one', [{ port: backends[0]!.port }]),
      ...serviceWithEndpoints('two', [{ port: backends[1]!.port }]),
      ingress('app', { 'shared.example.com': [{ path: '/', service: 'one' }] }),
    ],
    // debug: pushes are logged there (`tables pushed`)
    ['--routes-as-data=true', '--log-level', 'debug'],
  );
}, 30_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all(backends.map((b) => b.close()));
});

it('boots, serves the host from the shared server, and serves a backend change by a push', async () => {
  await waitFor('the host served', async () => (await answer()) === 'one', 20_000);
  const conf = logged('sync done').length;
  expect(conf).toBeGreaterThan(0);
  // The first config is the one reload a start makes; wait for it to be logged before counting.
  await waitFor('the first reload logged', () => logged('nginx reloaded').length > 0, 15_000);
  const reloads = logged('nginx reloaded').length;
  const pushes = logged('tables pushed').length;
  const status = await controller.rawPatch('/apis/networking.k8s.io/v1/namespaces/default/ingresses/app', {
    spec: {
      rules: [
        {
          host: 'shared.example.com',
          http: {
            paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'two', port: { number: 80 } } } }],
          },
        },
      ],
    },
  });
  expect(status).toBe(200);
  await waitFor('the change served', async () => (await answer()) === 'two', 20_000);
  await waitFor('its sync logged', () => logged('sync done').length > conf, 5_000);
  expect(logged('tables pushed').length).toBeGreaterThan(pushes);
  expect(logged('nginx reloaded').length).toBe(reloads);
}, 60_000);
