/**
 * postReview sends one `admission.k8s.io/v1` AdmissionReview (a CREATE of `object`) to a webhook over HTTPS, trusting
 * `ca`, and gives the review's response: what the controller's webhook tests read.
 */
import { request } from 'node:https';
import { WEBHOOK_PATH } from '../../src/http/webhook.js';

/** ReviewResponse is the part of an AdmissionReview's response the tests check. */
export interface ReviewResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly status?: { readonly message: string };
  readonly warnings?: readonly string[];
}

export function postReview(port: number, ca: string, object: object, uid = 'u-1'): Promise<ReviewResponse> {
  const body = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
      operation: 'CREATE',
      object,
    },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: WEBHOOK_PATH,
        method: 'POST',
        ca,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')).response));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
