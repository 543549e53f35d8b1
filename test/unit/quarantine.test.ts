/**
 * Finding 2 of "No tenant can stall, block or bypass another", the pure half: blame() reads where
 * a refusal points, and the Quarantine narrows it down to one Ingress, each step judged by a real
 * `nginx -t` of the config the step builds (the oracle a controller has).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { KubeObject } from '../../src/model/snapshot.js';
import { Quarantine, refusalReason, type Blamer } from '../../src/sync/quarantine.js';
import { toSnapshot } from '../../src/manifests/load.js';
import { nginxBinary, testConfig } from '../../src/nginx/binary.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { blame, refusedLine } from '../../src/sync/blame.js';
import { loadTemplate } from '../../src/render/load.js';
import { render, type NginxTemplate } from '../../src/render/render.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { weakCertificate } from '../support/weak-certificate.js';

let template: NginxTemplate;
let dir: string;
const options = { ...defaultBuildOptions, httpPort: 18080, httpsPort: 18443 };

beforeAll(async () => {
  template = await loadTemplate();
  dir = await mkdtemp(join(tmpdir(), 'ia-quarantine-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** tenants are n namespaces, each with an Ingress on its own host; `bad` also names a certificate nginx refuses. */
async function tenants(n: number, bad: number): Promise<KubeObject[]> {
  const objects: KubeObject[] = [ingressClass()];
  for (let i = 0; i < n; i++) {
    const namespace = `t${i}`;
    objects.push(...serviceWithEndpoints('web', [{ port: 9000 + i }], namespace));
    const tls = i === bad ? { tls: [{ hosts: [`t${i}.example`], secretName: 'weak' }] } : {};
    objects.push(ingress('site', { [`t${i}.example`]: [{ path: '/', service: 'web' }] }, { namespace, ...tls }));
  }
  const pair = await weakCertificate(`t${bad}.example`);
  objects.push(tlsSecret('weak', pair.certPem, pair.keyPem, `t${bad}`));
  return objects;
}

/** settle runs syncs as the controller does, with real `nginx -t` as nginx's verdict, until nginx takes one. */
async function settle(quarantine: Quarantine, objects: KubeObject[], start: { applied: string | null }) {
  let verdicts: Parameters<Quarantine['judge']>[0] = { applied: start.applied, refused: null };
  for (let rounds = 1; rounds <= 20; rounds++) {
    quarantine.judge(verdicts);
    const { snapshot, problems } = quarantine.prepare(toSnapshot(objects));
    const { model } = buildModel(snapshot, options);
    const text = render(model, template);
    quarantine.handedOver({ text, model, ingresses: snapshot.ingresses, secrets: snapshot.secrets });
    const conf = await writeConfigSet(dir, text, model.certificates);
    const verdict = await testConfig(nginxBinary(), dir, conf);
    if (verdict.ok && !quarantine.awaitingVerdict) return { rounds, problems, text };
    verdicts = verdict.ok
      ? { applied: text, refused: null }
      : { applied: start.applied, refused: { config: text, output: verdict.output } };
  }
  throw new Error('did not settle in 20 rounds');
}

/** emptyConfig is what nginx serves before any tenant: the suspects of an unattributed refusal are then all of them. */
async function emptyConfig(quarantine: Quarantine): Promise<string> {
  const { model } = buildModel(toSnapshot([]), options);
  const text = render(model, template);
  quarantine.handedOver({ text, model, ingresses: [], secrets: [] });
  return text;
}

describe('finding 2: the Ingress nginx refuses is found and left out, the rest applied', () => {
  it(
    'by the file nginx names: one refusal, the config without it, one retry with it (refused again), and the config ' +
      'without it',
    async () => {
      const quarantine = new Quarantine((output, handed) => blame(output, handed.text, handed.model));
      const applied = await emptyConfig(quarantine);
      const { rounds, problems, text } = await settle(quarantine, await tenants(8, 5), { applied });
      expect(rounds).toBe(4);
      expect(quarantine.heldKeys()).toEqual(['t5/site']);
      expect(problems).toEqual([
        expect.objectContaining({
          namespace: 't5',
          name: 'site',
          field: 'spec.tls',
          message: expect.stringMatching(/ee key too small/),
        }),
      ]);
      for (let i = 0; i < 8; i++) expect(text.includes(`"t${i}.example"`)).toBe(i !== 5);
    },
  );

  it('by bisection when the refusal points nowhere: log2(8) steps, each a real nginx -t', async () => {
    const nowhere: Blamer = () => null;
    const quarantine = new Quarantine(nowhere);
    const applied = await emptyConfig(quarantine);
    const { rounds, text } = await settle(quarantine, await tenants(8, 6), { applied });
    expect(quarantine.heldKeys()).toEqual(['t6/site']);
    // The refusal, three halvings (8 → 4 → 2 → 1), the config without the one found, its retry, and the config
    // without it.
    expect(rounds).toBeLessThanOrEqual(7);
    for (let i = 0; i < 8; i++) expect(text.includes(`"t${i}.example"`)).toBe(i !== 6);
  });

  it('lets go an Ingress whose retry nginx takes: the refusal had a passing cause', async () => {
    const quarantine = new Quarantine((output, handed) => blame(output, handed.text, handed.model));
    const snapshot = toSnapshot(await tenants(2, 1));
    const { model } = buildModel(snapshot, options);
    const hand = (text: string, ingresses = snapshot.ingresses) =>
      quarantine.handedOver({ text, model, ingresses, secrets: snapshot.secrets });
    hand('before', []);
    quarantine.judge({ applied: 'before', refused: null });
    hand('with both');
    // A refusal that names t1's certificate file, say while the disk was full.
    quarantine.judge({
      applied: 'before',
      refused: {
        config: 'with both',
        output:
          'nginx: [emerg] SSL_CTX_use_certificate("/x/certificates/t1_weak.pem") failed (28: No space left on device)',
      },
    });
    const without = quarantine.prepare(snapshot);
    expect(without.snapshot.ingresses.map((i) => i.metadata?.namespace)).toEqual(['t0']);
    hand('without t1', without.snapshot.ingresses);
    quarantine.judge({ applied: 'without t1', refused: null });
    expect(quarantine.awaitingVerdict).toBe(true);
    const retry = quarantine.prepare(snapshot);
    expect(retry.snapshot.ingresses).toHaveLength(2);
    hand('with both again');
    quarantine.judge({ applied: 'with both again', refused: null });
    expect(quarantine.heldKeys()).toEqual([]);
    expect(quarantine.awaitingVerdict).toBe(false);
  });

  it('reads a verdict as one on the latest config of its text (routes as data: one text with the Ingress or without)', async () => {
    const quarantine = new Quarantine((output, handed) => blame(output, handed.text, handed.model));
    const snapshot = toSnapshot(await tenants(2, 1));
    const { model } = buildModel(snapshot, options);
    const hand = (text: string, ingresses = snapshot.ingresses) =>
      quarantine.handedOver({ text, model, ingresses, secrets: snapshot.secrets });
    hand('shared', []);
    quarantine.judge({ applied: 'shared', refused: null });
    hand('with both');
    quarantine.judge({
      applied: 'shared',
      refused: {
        config: 'with both',
        output:
          'nginx: [emerg] SSL_CTX_use_certificate("/x/certificates/t1_weak.pem") failed (28: No space left on device)',
      },
    });
    const without = quarantine.prepare(snapshot);
    hand('shared', without.snapshot.ingresses);
    quarantine.judge({ applied: 'shared', refused: null });
    // the retry's config has the text nginx serves (t1's host is pushed, not rendered): nginx's word on it is that
    // it serves it, and t1 is let go instead of waiting for a verdict no reload will bring
    quarantine.prepare(snapshot);
    hand('shared');
    quarantine.judge({ applied: 'shared', refused: null });
    expect(quarantine.heldKeys()).toEqual([]);
    expect(quarantine.awaitingVerdict).toBe(false);
  });

  it('blames no one for an nginx -t that could not judge (no [emerg]: killed, timed out)', async () => {
    const quarantine = new Quarantine(() => ({ ingresses: ['t0/site'], field: 'spec' }));
    const objects = await tenants(2, 1);
    const snapshot = toSnapshot(objects);
    const { model } = buildModel(snapshot, options);
    quarantine.handedOver({ text: 'a', model, ingresses: [], secrets: [] });
    quarantine.handedOver({ text: 'b', model, ingresses: snapshot.ingresses, secrets: snapshot.secrets });
    quarantine.judge({ applied: 'a', refused: { config: 'b', output: 'Command timed out after 60000 milliseconds' } });
    expect(quarantine.heldKeys()).toEqual([]);
    quarantine.judge({
      applied: 'a',
      refused: { config: 'b', output: 'nginx: [emerg] something in /x/nginx.conf.next:3' },
    });
    expect(quarantine.heldKeys()).toEqual(['t0/site']);
  });

  it('lets the Ingress back in once it changes', async () => {
    const quarantine = new Quarantine((output, handed) => blame(output, handed.text, handed.model));
    const applied = await emptyConfig(quarantine);
    const objects = await tenants(3, 1);
    await settle(quarantine, objects, { applied });
    expect(quarantine.heldKeys()).toEqual(['t1/site']);
    const fixed = objects.map((o) =>
      o.kind === 'Ingress' && o.metadata?.namespace === 't1'
        ? ingress('site', { 't1.example': [{ path: '/', service: 'web' }] }, { namespace: 't1' })
        : o,
    );
    const { snapshot, problems } = quarantine.prepare(toSnapshot(fixed));
    expect(problems).toEqual([]);
    expect(snapshot.ingresses).toHaveLength(3);
  });
});

describe('blame', () => {
  it('reads the line and the reason of nginx -t output', () => {
    const output =
      'nginx: [emerg] invalid number of arguments in "proxy_buffers" directive in /x/nginx.conf.next:57\nnginx: ' +
      'configuration file /x/nginx.conf.next test failed\n';
    expect(refusedLine(output)).toBe(57);
    expect(refusalReason(output)).toBe(
      'invalid number of arguments in "proxy_buffers" directive in /x/nginx.conf.next:57',
    );
    expect(refusedLine('nginx: [emerg] SSL_CTX_use_certificate("/x/certificates/a.pem") failed')).toBeNull();
  });

  it.each([
    [
      'a location line: its Ingress',
      (t: string) => t.indexOf('location = "/b"'),
      { ingresses: ['t1/b'], field: 'spec.rules' },
    ],
    [
      "a server line outside locations: the server's Ingresses",
      (t: string) => t.indexOf('server_name "shared.example"'),
      { ingresses: ['t0/a', 't1/b'], field: 'spec' },
    ],
    [
      'an upstream: the Ingresses proxying to it',
      (t: string) => t.indexOf('upstream "t1_web_80"') + 30,
      { ingresses: ['t1/b'], field: 'spec.rules' },
    ],
    ['the http level: nobody', (t: string) => t.indexOf('server_tokens'), null],
  ])('%s', (_, at, expected) => {
    const objects: KubeObject[] = [
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: 9000 }], 't0'),
      ...serviceWithEndpoints('web', [{ port: 9001 }], 't1'),
      ingress('a', { 'shared.example': [{ path: '/a', service: 'web' }] }, { namespace: 't0' }),
      ingress('b', { 'shared.example': [{ path: '/b', service: 'web' }] }, { namespace: 't1' }),
    ];
    const { model } = buildModel(toSnapshot(objects), options);
    const text = render(model, template);
    const offset = at(text);
    expect(offset).toBeGreaterThan(0);
    const line = text.slice(0, offset).split('\n').length;
    expect(blame(`nginx: [emerg] something in /dir/nginx.conf.next:${line}`, text, model)).toEqual(expected);
  });
});
