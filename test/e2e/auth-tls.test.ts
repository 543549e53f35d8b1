/**
 * auth-tls through real nginx and real certificates: a client certificate signed by the CA in
 * auth-tls-secret gets through (the backend hears the verify result and the subject), one from
 * another CA or none at all does not, and plain HTTP, which carries no certificate, is refused.
 * In both modes: rendered, and through the controller with the Lua balancer.
 */
import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';

let backend: Backend;
let scene: Scene;
let client: KeyPair;
let stranger: KeyPair;

describe.each(SCENE_MODES)('%s', (mode) => {
  beforeAll(async () => {
    const ca = await issueCertificate({ commonName: 'Team CA', isCa: true });
    const otherCa = await issueCertificate({ commonName: 'Other CA', isCa: true });
    client = await issueCertificate({ commonName: 'alice', issuer: ca });
    stranger = await issueCertificate({ commonName: 'mallory', issuer: otherCa });
    backend = await startBackend('app');
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: backend.port }]),
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { namespace: 'default', name: 'team-ca' },
          data: { 'ca.crt': Buffer.from(ca.certPem).toString('base64') },
        },
        ingress(
          'mtls',
          { 'mtls.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({ 'auth-tls-secret': 'default/team-ca', 'auth-tls-pass-certificate-to-upstream': 'true' }),
          },
        ),
      ],
      { mode },
    );
  }, 60_000);

  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
  });

  /** overTls GETs mtls.test/ over HTTPS, showing `identity` when given: the status and the headers the backend saw. */
  function overTls(identity?: KeyPair) {
    return new Promise<{ status: number; seen?: Record<string, string> }>((resolve, reject) => {
      const req = httpsRequest(
        {
          host: '127.0.0.1',
          port: scene.httpsPort,
          path: '/',
          servername: 'mtls.test',
          headers: { host: 'mtls.test' },
          rejectUnauthorized: false,
          agent: false,
          ...(identity ? { cert: identity.certPem, key: identity.keyPem } : {}),
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              ...(res.statusCode === 200
                ? { seen: (JSON.parse(body) as { headers: Record<string, string> }).headers }
                : {}),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  describe('auth-tls through real nginx', () => {
    it('renders without problems', () => expect(scene.problems).toBe(''));

    it(
      'lets a certificate of the CA through; the backend ' + 'hears the result, the subject and the certificate',
      async () => {
        const answer = await overTls(client);
        expect(answer.status).toBe(200);
        expect(answer.seen?.['ssl-client-verify']).toBe('SUCCESS');
        expect(answer.seen?.['ssl-client-subject-dn']).toBe('CN=alice');
        expect(decodeURIComponent(answer.seen?.['ssl-client-cert'] ?? '')).toBe(`${client.certPem.trim()}\n`);
      },
    );

    it('refuses a request without a certificate, or with one of another CA', async () => {
      expect((await overTls()).status).toBe(400);
      expect((await overTls(stranger)).status).toBe(400);
    });

    it('refuses plain HTTP, which cannot carry a certificate', async () => {
      expect((await scene.http('mtls.test', '/')).status).toBe(403);
    });
  });
});
