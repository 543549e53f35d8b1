import { describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { checkCiphers } from '../../src/model/config-map/ciphers.js';
import { emptySnapshot } from '../../src/model/snapshot.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, tlsSecret } from '../support/manifests.js';

describe('filesDigest', () => {
  it('changes nginx.conf when a certificate is renewed under the same file name', async () => {
    const template = await loadTemplate();
    const conf = async () => {
      const leaf = await issueCertificate({ commonName: 'a.example.com', dnsNames: ['a.example.com'] });
      const snapshot = {
        ...emptySnapshot,
        ingressClasses: [ingressClass()],
        secrets: [tlsSecret('tls', leaf.certPem, leaf.keyPem)],
        ingresses: [
          ingress(
            'a',
            { 'a.example.com': [{ path: '/', service: 'web' }] },
            { tls: [{ hosts: ['a.example.com'], secretName: 'tls' }] },
          ),
        ],
      };
      const { model } = buildModel(snapshot as never, defaultBuildOptions);
      return { text: render(model, template), files: model.certificates.map((c) => c.file) };
    };
    const [before, after] = [await conf(), await conf()];
    expect(after.files).toEqual(before.files);
    expect(after.text).not.toBe(before.text);
    expect(before.text).toMatch(/^# Certificates and htpasswd files, digest "[0-9a-f]{32}"/m);
  });
});

describe('checkCiphers', () => {
  it.each([['HIGH:!aNULL:!MD5'], ['ECDHE-RSA-AES128-GCM-SHA256'], ['EECDH+AESGCM:EDH+AESGCM'], ['HIGH:@STRENGTH']])(
    'accepts %s',
    (v) => expect(checkCiphers(v).ok).toBe(true),
  );
  it.each([['503'], ['1m'], ['ABC'], ['!aNULL'], ['HIGH;'], ['']])('rejects %j, which nginx -t would refuse', (v) =>
    expect(checkCiphers(v).ok).toBe(false),
  );
});
