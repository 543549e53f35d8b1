/**
 * admission-review builds `admission.k8s.io/v1` AdmissionReviews (a CREATE of an Ingress) and posts them to a webhook
 * over HTTPS, trusting `ca`, as the API server does: what the controller's webhook tests send and read.
 */
import { writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { WEBHOOK_PATH } from '../../src/http/webhook.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';

/** ReviewResponse is the part of an AdmissionReview's response the tests check. */
export interface ReviewResponse {
  readonly uid: string;
  readonly allowed: boolean;
  readonly status?: { readonly message: string };
  readonly warnings?: readonly string[];
}

/** Posted is the webhook's HTTP answer to one post: its status, Retry-After when given, and body. */
export interface Posted {
  readonly status: number;
  readonly retryAfter?: string;
  readonly body: string;
}

/** writeServingCertificate issues a webhook certificate for 127.0.0.1 and writes it to `dir` as tls.crt and tls.key. */
export async function writeServingCertificate(dir: string): Promise<KeyPair> {
  const pair = await issueCertificate({ commonName: 'webhook', ipAddresses: ['127.0.0.1'] });
  await writeFile(join(dir, 'tls.crt'), pair.certPem);
  await writeFile(join(dir, 'tls.key'), pair.keyPem, { mode: 0o600 });
  return pair;
}

/** webhookFlags are the controller's flags serving the webhook on 127.0.0.1:`port` with writeServingCertificate's files. */
export const webhookFlags = (port: number, dir: string): string[] => [
  '--validating-webhook',
  `127.0.0.1:${port}`,
  '--validating-webhook-certificate',
  join(dir, 'tls.crt'),
  '--validating-webhook-key',
  join(dir, 'tls.key'),
];

/** admissionReview is the JSON of an AdmissionReview asking about a CREATE of `object`. */
export function admissionReview(object: object, uid = 'u-1'): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
      operation: 'CREATE',
      object,
    },
  });
}

/**
 * postAdmission sends `body` to the webhook on a connection of its own and gives its answer. The webhook may answer
 * (429, 413) and close before the whole upload is sent: the answer is what counts.
 */
export function postAdmission(port: number, ca: string, body: string | Buffer): Promise<Posted> {
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
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          resolve({
            status: res.statusCode ?? 0,
            ...(retryAfter ? { retryAfter } : {}),
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** postReview posts an AdmissionReview of a CREATE of `object` and gives the review's response. */
export async function postReview(port: number, ca: string, object: object, uid = 'u-1'): Promise<ReviewResponse> {
  const answer = await postAdmission(port, ca, admissionReview(object, uid));
  return (JSON.parse(answer.body) as { response: ReviewResponse }).response;
}
