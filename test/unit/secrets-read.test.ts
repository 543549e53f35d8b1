/**
 * Which Secrets matter comes from the model (issue 15): secretsRead lists what the last build's
 * plans read, and ClusterCache.changedSince finds a change the Secret watcher judged by an older
 * list while the build ran.
 */
import { describe, expect, it } from 'vitest';
import { BuildMemo, buildModel, secretsRead } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { ClusterCache } from '../../src/kube/cache.js';
import { ingress } from '../support/manifests.js';

const A = 'nginx.ingress.kubernetes.io/';
const secret = (name: string, namespace = 'default', rv = '1') => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace, resourceVersion: rv },
  stringData: { x: 'y' },
});
const ingresses = [
  ingress(
    'tls',
    { 'tls.test': [{ path: '/', service: 'app' }] },
    { tls: [{ hosts: ['tls.test'], secretName: 'site-tls' }] },
  ),
  ingress(
    'auth',
    { 'auth.test': [{ path: '/', service: 'app' }] },
    { namespace: 'team', annotations: { [`${A}auth-type`]: 'basic', [`${A}auth-secret`]: 'users' } },
  ),
  ingress(
    'mtls',
    { 'mtls.test': [{ path: '/', service: 'app' }] },
    { annotations: { [`${A}auth-tls-secret`]: 'default/team-ca' } },
  ),
  // another class: not ours, so nothing it names is read
  {
    ...ingress(
      'other',
      { 'other.test': [{ path: '/', service: 'app' }] },
      { tls: [{ hosts: ['other.test'], secretName: 'other-tls' }] },
    ),
    spec: { ingressClassName: 'elsewhere', tls: [{ hosts: ['other.test'], secretName: 'other-tls' }] },
  },
];
const snapshot = {
  ingresses,
  ingressClasses: [{ metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } }],
  services: [],
  endpointSlices: [],
  secrets: [],
  configMaps: [],
} as unknown as Snapshot;

describe('secretsRead', () => {
  it(
    'issue 15: names the Secrets of spec.tls, auth-secret and auth-tls-secret (found or not) and the default ' +
      'certificate, nothing else',
    () => {
      const memo = new BuildMemo();
      const options = { ...defaultBuildOptions, defaultSslCertificate: 'ingress/default-cert' };
      buildModel(snapshot, options, memo);
      expect(secretsRead(memo, options)).toEqual({
        keys: ['default/site-tls', 'default/team-ca', 'ingress/default-cert', 'team/users'],
        namespaces: [],
        certificatesOnly: ['default/site-tls'],
      });
    },
  );

  it('issue 15: follows the last build, memo or not, and names the namespaces of held Ingresses whole', () => {
    const memo = new BuildMemo();
    buildModel(snapshot, defaultBuildOptions, memo);
    buildModel({ ...snapshot, ingresses: ingresses.slice(1) }, defaultBuildOptions, memo);
    expect(secretsRead(memo, defaultBuildOptions, ['default/tls'])).toEqual({
      keys: ['default/team-ca', 'team/users'],
      namespaces: ['default'],
      certificatesOnly: [],
    });
  });

  it('issue 16: a Secret read as a certificate and also as a file (here a CA), or in a held namespace, is not only a certificate', () => {
    const memo = new BuildMemo();
    const both = ingress(
      'both',
      { 'both.test': [{ path: '/', service: 'app' }] },
      { tls: [{ hosts: ['both.test'], secretName: 'team-ca' }] },
    );
    const team = ingress(
      'team-tls',
      { 'team.test': [{ path: '/', service: 'app' }] },
      { namespace: 'team', tls: [{ hosts: ['team.test'], secretName: 'team-tls' }] },
    );
    buildModel({ ...snapshot, ingresses: [...ingresses, both, team] }, defaultBuildOptions, memo);
    expect(secretsRead(memo, defaultBuildOptions).certificatesOnly).toEqual(['default/site-tls', 'team/team-tls']);
    expect(secretsRead(memo, defaultBuildOptions, ['team/auth']).certificatesOnly).toEqual(['default/site-tls']);
  });
});

describe('ClusterCache.changedSince', () => {
  it(
    'issue 15: lists the keys among those given (or in the namespaces given) the cache holds differently from an ' +
      'earlier list',
    () => {
      const cache = new ClusterCache();
      for (const s of [secret('read'), secret('unread'), secret('held', 'team')]) cache.upsert('Secret', s);
      const before = cache.list('Secret');
      expect(cache.changedSince('Secret', before, { keys: ['default/read'], namespaces: ['team'] })).toEqual([]);
      cache.upsert('Secret', secret('read', 'default', '2'));
      cache.upsert('Secret', secret('unread', 'default', '2'));
      cache.upsert('Secret', secret('new', 'team'));
      cache.remove('Secret', secret('held', 'team'));
      expect(
        cache.changedSince('Secret', before, { keys: ['default/read', 'default/missing'], namespaces: ['team'] }),
      ).toEqual(['default/read', 'team/held', 'team/new']);
    },
  );
});
