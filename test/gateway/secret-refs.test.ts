/** Which Secrets our Gateways name, so that the Secret watcher reports their changes (a renewed certificate). */
import { describe, expect, it } from 'vitest';
import { BuildMemo, buildModel, secretsRead } from '../../src/model/build.js';
import { gatewaySecretKeys } from '../../src/model/gateway/secret-refs.js';
import { snapshotOf } from '../support/manifests.js';
import { GATEWAY_OPTIONS, gateway, gatewayClass, listener } from './fixtures.js';

describe('the Secrets a Gateway names', () => {
  const gw = gateway(
    [
      listener('https', { port: 443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'web' }] } }),
      listener('term', {
        port: 8443,
        protocol: 'TLS',
        tls: {
          mode: 'Terminate',
          certificateRefs: [
            { name: 'term', namespace: 'certs' },
            { kind: 'Other', name: 'x' },
          ],
        },
      }),
    ],
    'gw',
    'default',
    { tls: { backend: { clientCertificateRef: { name: 'client' } } } },
  );

  it('lists certificateRefs (another namespace’s as named) and the backend client certificate, not other kinds', () => {
    expect(
      gatewaySecretKeys([gw as never, { metadata: {} }, { metadata: { namespace: 'x' }, spec: 7 } as never]),
    ).toEqual(['certs/term', 'default/client', 'default/web']);
  });

  it('are among the Secrets a build read, even before they exist', () => {
    const memo = new BuildMemo();
    buildModel(snapshotOf([gatewayClass(), gw]), GATEWAY_OPTIONS, memo);
    expect(secretsRead(memo, GATEWAY_OPTIONS).keys).toEqual(['certs/term', 'default/client', 'default/web']);
  });
});
