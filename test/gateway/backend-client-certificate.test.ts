/**
 * A Gateway's `spec.tls.backend.clientCertificateRef` (GatewayBackendClientCertificate): judged as a listener
 * certificate is (a core Secret with a certificate and its key, another namespace's only with a ReferenceGrant), and
 * reported as the Gateway's ResolvedRefs condition; a refused one leaves the Gateway accepted.
 */
import { describe, expect, it } from 'vitest';
import { buildGatewayRoutes } from '../../src/model/gateway/build.js';
import { gateway, grant, input, listener, tlsSecret } from './fixtures.js';

const withCertificate = (name: string, ref: Record<string, unknown>) =>
  gateway([listener('http')], name, 'default', { tls: { backend: { clientCertificateRef: ref } } });

const conditionsOf = (
  gateways: Record<string, unknown>[],
  secrets = [tlsSecret('client'), tlsSecret('elsewhere', 'other')],
  grants: Record<string, unknown>[] = [],
) => {
  const result = buildGatewayRoutes(input({ gateways, secrets, referenceGrants: grants }));
  return (name: string) =>
    result.status.gateways.find((g) => g.name === name)?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);
};

describe('the Gateway’s client certificate for TLS backends', () => {
  it('resolves a Secret of the Gateway’s namespace, and reports ResolvedRefs only when one is named', () => {
    const of = conditionsOf([
      withCertificate('gw', { group: '', kind: 'Secret', name: 'client' }),
      gateway([listener('http', { port: 8080 })], 'plain'),
    ]);
    expect(of('gw')).toContain('ResolvedRefs=True/ResolvedRefs');
    expect(of('plain')?.some((c) => c.startsWith('ResolvedRefs'))).toBe(false);
  });

  it('refuses a missing or malformed Secret, another kind or group, and another namespace’s without a grant', () => {
    const of = conditionsOf([
      withCertificate('missing', { group: '', kind: 'Secret', name: 'nonexistent' }),
      withCertificate('kind', { group: '', kind: 'WrongKind', name: 'client' }),
      withCertificate('group', { group: 'wrong.example.io', kind: 'Secret', name: 'client' }),
      withCertificate('cross', { group: '', kind: 'Secret', name: 'elsewhere', namespace: 'other' }),
    ]);
    for (const name of ['missing', 'kind', 'group']) {
      expect(of(name)).toContain('ResolvedRefs=False/InvalidClientCertificateRef');
      expect(of(name)).toContain('Accepted=True/Accepted');
    }
    expect(of('cross')).toContain('ResolvedRefs=False/RefNotPermitted');
  });

  it('takes another namespace’s Secret that a ReferenceGrant allows', () => {
    const of = conditionsOf(
      [withCertificate('cross', { group: '', kind: 'Secret', name: 'elsewhere', namespace: 'other' })],
      undefined,
      [
        grant(
          'other',
          [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default' }],
          [{ group: '', kind: 'Secret' }],
        ),
      ],
    );
    expect(of('cross')).toContain('ResolvedRefs=True/ResolvedRefs');
  });
});
