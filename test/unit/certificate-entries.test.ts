/**
 * CertificateEntries (src/sync/certificate-entries.ts): two files of one Secret (the default certificate's and an
 * Ingress's, say) are pushed under two keys, the Secret's and `<Secret>#<n>`, both of the shape nginx's Lua takes
 * (validate.lua's secret_name: at most four digits after `#`, checked by certificateProblem here); a file keeps its key
 * while it lives, and a freed key is taken again by the next file that needs one.
 */
import { describe, expect, it } from 'vitest';
import type { Certificate, NginxModel, Server } from '../../src/model/nginx-model.js';
import { certificateProblem } from '../../src/model/table-check.js';
import { CertificateEntries } from '../../src/sync/certificate-entries.js';

const PEM =
  '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
const file = (name: string): Certificate => ({ id: 'default/shared', file: `certificates/${name}.pem`, pem: PEM });
const server = (host: string, certificate: Certificate) =>
  ({ host, certificateFile: certificate.file, inheritsCertificate: false, isDefault: false }) as unknown as Server;
const model = (servers: Server[], certificates: Certificate[]) =>
  ({ defaultServer: undefined, servers, certificates, gateway: null }) as unknown as NginxModel;

describe('CertificateEntries keys', () => {
  it('gives a second file of one Secret its own key, of the shape nginx takes, and keeps keys while files live', () => {
    const [a, b, c] = [file('a'), file('b'), file('c')];
    const entries = new CertificateEntries();
    const keys = (m: NginxModel) =>
      Object.fromEntries(entries.update(m).certificates.map((e) => [e.hosts.join(' '), e.secret]));
    expect(keys(model([server('a.test', a), server('b.test', b)], [a, b]))).toEqual({
      'a.test': 'default/shared',
      'b.test': 'default/shared#1',
    });
    for (const key of ['default/shared', 'default/shared#1']) expect(certificateProblem(key, 'x', 'y')).toBeNull();
    // a goes: b keeps its key; c, new, takes the Secret's own key, free again
    expect(keys(model([server('b.test', b), server('c.test', c)], [b, c]))).toEqual({
      'b.test': 'default/shared#1',
      'c.test': 'default/shared',
    });
  });
});
