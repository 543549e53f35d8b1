/**
 * webhook-flooder posts large AdmissionReviews to a webhook from parallel connections, as a flooding client would,
 * in a process of its own (so the flood's own JSON and TLS work never runs on the controller's event loop), and
 * prints one JSON line: each review's uid, status, Retry-After and body. Run by Node itself (type stripping):
 * `node test/support/webhook-flooder.ts PORT CA_FILE CONNECTIONS ROUNDS PATHS`. So it imports node: modules only:
 * admission-review.ts (the same review and post) names src/ modules by their compiled .js names, which Node's type
 * stripping cannot load.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

const [portText, caFile, connectionsText, roundsText, pathsText] = process.argv.slice(2);
const port = Number(portText);
const ca = readFileSync(caFile ?? '', 'utf8');
const connections = Number(connectionsText);
const rounds = Number(roundsText);
const pathCount = Number(pathsText);

/** heavyReview is one Ingress with `pathCount` long paths (about 160 bytes each): seconds to judge at 25,000. */
export function heavyReview(uid: string, count: number): string {
  const paths = Array.from({ length: count }, (_, i) => ({
    path: `/p${i}/${'x'.repeat(64)}`,
    pathType: 'Prefix',
    backend: { service: { name: 'app', port: { number: 80 } } },
  }));
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
      operation: 'CREATE',
      namespace: 'default',
      name: uid,
      object: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name: uid, namespace: 'default' },
        spec: { ingressClassName: 'nginx', rules: [{ host: `${uid}.flood.test`, http: { paths } }] },
      },
    },
  });
}

interface Posted {
  readonly uid: string;
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: string;
}

function post(uid: string, body: string): Promise<Posted> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/networking/v1/ingresses',
        method: 'POST',
        ca,
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            uid,
            status: res.statusCode ?? 0,
            retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', (error) => resolve({ uid, status: 0, retryAfter: null, body: String(error) }));
    req.end(body);
  });
}

if (process.argv[1]?.endsWith('webhook-flooder.ts')) {
  const bodies = Array.from({ length: connections * rounds }, (_, i) => heavyReview(`flood-${i}`, pathCount));
  const results: Posted[] = [];
  await Promise.all(
    Array.from({ length: connections }, async (_, c) => {
      for (let r = 0; r < rounds; r++) {
        const i = c * rounds + r;
        results.push(await post(`flood-${i}`, bodies[i] ?? ''));
      }
    }),
  );
  process.stdout.write(`${JSON.stringify(results)}\n`);
}
