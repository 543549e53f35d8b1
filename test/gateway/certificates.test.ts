/**
 * Whose certificate a TLS handshake gets when Gateways on their own addresses (`--gateway-addresses`) and an Ingress
 * name the same hostname: each Gateway HTTPS server serves its own certificateRef, found by its server key, never the
 * Ingress's or another Gateway's. Built and rendered as the controller does, through the real nginx and the pushed
 * certificate table.
 */
import { readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import { servedNames } from '../../src/model/dynamic-tables.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import type { DynamicTables } from '../../src/model/pushed-tables.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { pushTables } from '../../src/actors/nginx.js';
import type { ControlChannel } from '../../src/nginx/control.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { luaFolder, startNginx, type RunningNginx } from '../support/nginx.js';
import { CONTROLLER, gateway, gatewayClass, listener, namespace, route } from './fixtures.js';

const [A, B] = ['127.0.0.201', '127.0.0.202'];
const template = await loadTemplate();

let dir: string;
let nginx: RunningNginx;
let control: ControlChannel;
let pod: Server;
let options: BuildOptions;
let split: DynamicSplit;
let pushed: DynamicTables | null = null;
let tlsPort: number;
let objects: Record<string, unknown>[];
let confText = '';
const pairs: Record<string, KeyPair> = {};

/** handshake connects to `host`:tlsPort with SNI `servername` and returns the served certificate's CN. */
function handshake(host: string, servername: string): Promise<string> {
  return new Promise((done, fail) => {
    const socket = connect({ host, port: tlsPort, servername, rejectUnauthorized: false }, () => {
      const cn = socket.getPeerCertificate().subject.CN;
      socket.destroy();
      done(String(cn));
    });
    socket.on('error', fail);
  });
}

const snapshot = (): Snapshot => snapshotOf([...objects, namespace('default')]);

/** apply builds, renders, writes nginx.conf (before nginx starts) and pushes the tables that changed. */
async function apply(): Promise<{ confChanged: boolean; problems: string[] }> {
  const result = buildModel(snapshot(), options);
  const { model, tables } = split.split(result.model);
  const text = render(model, template);
  const confChanged = text !== confText;
  if (confChanged) {
    await writeConfigSet(dir, text, model.certificates);
    confText = text;
  }
  pushed = control ? ((await pushTables(control, tables, pushed)).pushed as DynamicTables) : tables;
  return { confChanged, problems: result.problems.map((p) => `${p.kind} ${p.name} ${p.field}: ${p.message}`) };
}

const httpsListener = (name: string, hostname: string, secret: string) =>
  listener(name, { port: 443, protocol: 'HTTPS', hostname, tls: { certificateRefs: [{ name: secret }] } });

beforeAll(async () => {
  pod = createServer((_, res) => res.end('pod'));
  await new Promise<void>((done) => pod.listen(0, '127.0.0.2', done));
  for (const name of ['gw-a', 'gw-b', 'ingress', 'deep', 'gw-a-renewed'])
    pairs[name] = await issueCertificate({ commonName: name, dnsNames: ['shared.test'] });
  const folder = await luaFolder('ia-gw-certs-');
  dir = folder.dir;
  const port = await freePort();
  tlsPort = await freePort();
  options = {
    ...defaultBuildOptions,
    httpPort: port,
    httpsPort: tlsPort,
    listenAddress: '127.0.0.1',
    dynamic: folder.dynamic,
    gateway: { controllerName: CONTROLLER, addresses: [A, B] },
  };
  objects = [
    ingressClass(),
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: (pod.address() as AddressInfo).port }]),
    ...Object.entries(pairs).map(([name, pair]) => tlsSecret(name, pair.certPem, pair.keyPem)),
    // the Ingress's TLS host on the shared address
    ingress(
      'legacy',
      { 'shared.test': [{ path: '/', service: 'web' }] },
      { tls: [{ hosts: ['shared.test'], secretName: 'ingress' }] },
    ),
    gatewayClass(),
    // two Gateways, each on its own address, both with shared.test; gw-a also has a wildcard listener
    gateway([httpsListener('https', 'shared.test', 'gw-a'), httpsListener('deep', '*.deep.test', 'deep')], 'gw-a'),
    gateway([httpsListener('https', 'shared.test', 'gw-b')], 'gw-b'),
    route('to-a', {
      hostnames: ['shared.test', '*.deep.test'],
      parentRefs: [{ name: 'gw-a' }],
      rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
    }),
    route('to-b', { hostnames: ['shared.test'], parentRefs: [{ name: 'gw-b' }] }),
  ];
  split = new DynamicSplit();
  const first = await apply();
  expect(first.problems).toEqual([]);
  nginx = await startNginx(dir, port);
  control = folder.control;
  pushed = null;
  await apply();
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  await new Promise((done) => pod?.close(done));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('one hostname, an Ingress and two Gateways on their own addresses', () => {
  it('each address serves its own certificate for the name', async () => {
    expect(await handshake('127.0.0.1', 'shared.test')).toBe('ingress');
    expect(await handshake(A, 'shared.test')).toBe('gw-a');
    expect(await handshake(B, 'shared.test')).toBe('gw-b');
  });

  it('pushes the Gateways’ entries by server key, beside the Ingress host', () => {
    const ids = servedNames(pushed!.certificates).map((n) => n.replace(/^server /, ''));
    expect(ids).toEqual([
      'shared.test',
      `${A}:${tlsPort}/*.deep.test`,
      `${A}:${tlsPort}/shared.test`,
      `${B}:${tlsPort}/shared.test`,
    ]);
  });

  it('serves a wildcard server’s certificate to names any number of labels below it', async () => {
    expect(await handshake(A, 'x.deep.test')).toBe('deep');
    expect(await handshake(A, 'a.b.deep.test')).toBe('deep');
    // not on the other Gateway's address, where no listener names it
    expect(await handshake(B, 'x.deep.test')).not.toBe('deep');
  });

  it('a renewed certificate is pushed to its Gateway’s server only: nginx.conf stays', async () => {
    const renewed = objects.find((o) => o.kind === 'Secret' && (o.metadata as { name: string }).name === 'gw-a')!;
    const fresh = tlsSecret('gw-a', pairs['gw-a-renewed']!.certPem, pairs['gw-a-renewed']!.keyPem);
    objects[objects.indexOf(renewed)] = fresh;
    const before = await readFile(join(dir, 'nginx.conf'), 'utf8');
    expect((await apply()).confChanged).toBe(false);
    expect(await readFile(join(dir, 'nginx.conf'), 'utf8')).toBe(before);
    expect(await handshake(A, 'shared.test')).toBe('gw-a-renewed');
    expect(await handshake(B, 'shared.test')).toBe('gw-b');
    expect(await handshake('127.0.0.1', 'shared.test')).toBe('ingress');
  });
});
