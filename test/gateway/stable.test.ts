/**
 * With the Gateway API on (the controller's default), a build whose input did not change hands back the same
 * certificate list and Gateway model objects, so DynamicSplit's identity-keyed certificate table holds and a sync
 * does not re-split and re-hash every certificate.
 */
import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { BuildMemo } from '../../src/model/incremental/memo.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { GATEWAY_OPTIONS, gateway, gatewayClass, listener, namespace, route } from './fixtures.js';

const options = GATEWAY_OPTIONS;

describe('an unchanged build with the Gateway API on', async () => {
  const pair = await issueCertificate({ commonName: 'a.example.com', dnsNames: ['a.example.com', 'gw.example.com'] });
  const base = [
    ingressClass(),
    ...serviceWithEndpoints('web', [{ ip: '10.0.0.1', port: 8080 }]),
    ...serviceWithEndpoints('gw-only', [{ ip: '10.0.0.2', port: 8080 }]),
    tlsSecret('site', pair.certPem, pair.keyPem),
    ingress(
      'a',
      { 'a.example.com': [{ path: '/', service: 'web' }] },
      { tls: [{ hosts: ['a.example.com'], secretName: 'site' }] },
    ),
    namespace('default'),
  ];
  const gatewayObjects = [
    gatewayClass(),
    gateway([
      listener('https', {
        port: 443,
        protocol: 'HTTPS',
        hostname: 'gw.example.com',
        tls: { certificateRefs: [{ name: 'site' }] },
      }),
    ]),
    route('r', { hostnames: ['gw.example.com'], rules: [{ backendRefs: [{ name: 'gw-only', port: 80 }] }] }),
  ];

  it.each([
    ['no Gateway at all', base],
    ['a Gateway with an HTTPS listener and a route to a Service no Ingress uses', [...base, ...gatewayObjects]],
  ])('%s: the same objects, and the same tables', (_name, objects) => {
    const memo = new BuildMemo();
    const split = new DynamicSplit();
    // a new snapshot each time, as the cache hands out, with the same objects in it
    const first = buildModel(snapshotOf([...objects]), options, memo).model;
    const tables = split.split(first).tables;
    const second = buildModel(snapshotOf([...objects]), options, memo).model;
    expect(second.certificates).toBe(first.certificates);
    expect(second.gateway).toBe(first.gateway);
    expect(split.split(second).tables.certificates).toBe(tables.certificates);
  });
});
