/**
 * The validating admission webhook (`--validating-webhook`): HTTPS, `admission.k8s.io/v1`
 * AdmissionReviews for Ingresses on ingress-nginx's path, judged by the pure judge
 * (src/model/admission.ts) against the snapshot the controller already holds. Nothing from a
 * review is written anywhere or run: no file, no `nginx -t` (ingress-nginx's CVE-2025-1974).
 */
import { statSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log.js';
import type { AdmissionOperation, Verdict } from '../model/admission.js';
import type { Ingress } from '../model/snapshot.js';
import type { ReviewObservation } from './admission-metrics.js';

/** WEBHOOK_PATH is where ingress-nginx's chart points its ValidatingWebhookConfiguration. */
export const WEBHOOK_PATH = '/networking/v1/ingresses';
/** WEBHOOK_NAME is the webhook's name in ingress-nginx's ValidatingWebhookConfiguration. */
export const WEBHOOK_NAME = 'validate.nginx.ingress.kubernetes.io';

/**
 * ingressWebhookConfiguration is a ValidatingWebhookConfiguration as ingress-nginx's chart writes it (CREATE and
 * UPDATE of networking.k8s.io/v1 ingresses, failurePolicy Fail, no side effects), calling `clientConfig`; `extra`
 * sets or overrides fields of the webhook entry.
 */
export function ingressWebhookConfiguration(
  name: string,
  clientConfig: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: WEBHOOK_NAME,
        clientConfig,
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: ['networking.k8s.io'],
            apiVersions: ['v1'],
            resources: ['ingresses'],
          },
        ],
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        ...extra,
      },
    ],
  };
}

/** MAX_BODY_BYTES: an object is at most 3 MB in the API; ingress-nginx takes three times that. */
export const MAX_BODY_BYTES = 9 * 1024 * 1024;

/** Judge answers for one candidate Ingress (the object after the operation). */
export type Judge = (operation: AdmissionOperation, ingress: Ingress) => Verdict;

/** WebhookOptions are where the certificate and key come from (files, or a KeySource) and who judges. */
export interface WebhookOptions {
  readonly certFile?: string;
  readonly keyFile?: string;
  /** instead of the files: a pair kept in memory (the self-made certificate, src/http/webhook-self-signed.ts) */
  readonly keys?: KeySource;
  readonly judge: Judge;
  readonly log: Logger;
  /** told of each judged review (/metrics) */
  readonly observe?: (review: ReviewObservation) => void;
}

/** KeyPem is a certificate (chain) and its key, PEM. */
export interface KeyPem {
  readonly cert: Buffer | string;
  readonly key: Buffer | string;
}

/** KeySource gives the server's pair when it changed since the last call (always the first time), else null. */
export interface KeySource {
  /** what the log names as the pair's origin */
  readonly origin: string;
  changed(): KeyPem | null;
}

/** MemoryKeys is a KeySource set in memory: the key is never written anywhere. */
export class MemoryKeys implements KeySource {
  private pending: KeyPem | null = null;
  constructor(readonly origin: string) {}

  /** set hands the server a new pair; it takes it before the next connection's handshake. */
  set(pair: KeyPem): void {
    this.pending = pair;
  }

  changed(): KeyPem | null {
    const pair = this.pending;
    this.pending = null;
    return pair;
  }
}

/** Refused is a review that cannot be judged: the HTTP status and why. */
class Refused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** KeyFiles reads the certificate and key, and reads them again when either file changed (a rotation). */
class KeyFiles implements KeySource {
  private seen = '';
  constructor(
    private readonly certFile: string,
    private readonly keyFile: string,
  ) {}

  get origin(): string {
    return this.certFile;
  }

  /** changed gives the pair when the files differ from the last read (always the first time), else null. */
  changed(): { cert: Buffer; key: Buffer } | null {
    const stamp = [this.certFile, this.keyFile]
      .map((f) => {
        const s = statSync(f);
        return `${s.ino}:${s.size}:${s.mtimeMs}`;
      })
      .join(' ');
    if (stamp === this.seen) return null;
    const pair = { cert: readFileSync(this.certFile), key: readFileSync(this.keyFile) };
    this.seen = stamp;
    return pair;
  }
}

/**
 * createWebhookServer makes the (not yet listening) HTTPS server. The certificate and key are
 * read at once (a missing or bad pair throws here, at start) and read again before the TLS
 * handshake of any new connection after either file changed, so a rotated Secret is served
 * without a restart; a pair that does not load keeps the last good one, with a warning.
 */
export function createWebhookServer(options: WebhookOptions): Server {
  const files = options.keys ?? new KeyFiles(options.certFile ?? '', options.keyFile ?? '');
  const first = files.changed();
  if (!first) throw new Error(`the webhook has no certificate yet (${files.origin})`);
  const server = createServer({ ...first, minVersion: 'TLSv1.2' }, (req, res) => handle(req, res, options));
  // Before the TLS server's own listener: the new context applies to this very connection.
  server.prependListener('connection', () => {
    try {
      const pair = files.changed();
      if (pair) {
        server.setSecureContext({ ...pair, minVersion: 'TLSv1.2' });
        options.log.info({ cert: files.origin }, 'webhook certificate reloaded');
      }
    } catch (error) {
      options.log.warn({ err: error }, 'webhook certificate or key unreadable; the last good pair stays');
    }
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  return server;
}

function handle(req: IncomingMessage, res: ServerResponse, options: WebhookOptions): void {
  const path = new URL(req.url ?? '/', 'https://localhost').pathname;
  const refuse = (error: Refused, headers: Record<string, string> = {}) => {
    if (res.headersSent) return;
    res.writeHead(error.status, { 'content-type': 'text/plain; charset=utf-8', ...headers }).end(`${error.message}\n`);
    options.log.debug({ status: error.status, reason: error.message }, 'admission review refused');
  };
  const early = refusedAtOnce(path, req);
  if (early) {
    refuse(early, early.status === 405 ? { allow: 'POST' } : {});
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    // Past the limit nothing more is kept; the answer closes the connection, which ends the upload.
    if (size > MAX_BODY_BYTES)
      refuse(new Refused(413, `the review is over ${MAX_BODY_BYTES} bytes`), { connection: 'close' });
    else chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > MAX_BODY_BYTES) return;
    try {
      const read = performance.now();
      const review = readReview(Buffer.concat(chunks).toString('utf8'));
      const started = performance.now();
      const verdict = options.judge(review.operation, review.object);
      const response = answer(review.uid, verdict);
      const judged = performance.now();
      // Named as ingress-nginx names its checks: by the object's metadata.
      options.observe?.({
        namespace: review.object.metadata?.namespace || review.namespace,
        name: review.object.metadata?.name || review.name,
        allowed: verdict.allowed,
        tested: verdict.tested,
        testedSeconds: (judged - started) / 1000,
        roundtripSeconds: (judged - read) / 1000,
      });
      options.log.info(
        {
          ingress: `${review.namespace}/${review.name}`,
          operation: review.operation,
          allowed: verdict.allowed,
          ms: Math.round((performance.now() - started) * 10) / 10,
          ...(verdict.allowed ? {} : { reason: verdict.message }),
        },
        'admission review',
      );
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response));
    } catch (error) {
      if (error instanceof Refused) refuse(error);
      else {
        options.log.error({ err: error }, 'admission review failed');
        refuse(new Refused(500, 'the review could not be judged'));
      }
    }
  });
  req.on('error', () => res.destroy());
}

/** refusedAtOnce is what the path, method and content type alone refuse, before the body is read; null: read it. */
function refusedAtOnce(path: string, req: IncomingMessage): Refused | null {
  if (path !== WEBHOOK_PATH) return new Refused(404, `not found: reviews go to ${WEBHOOK_PATH}`);
  if (req.method !== 'POST') return new Refused(405, 'an AdmissionReview is POSTed');
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    return new Refused(400, `content-type must be application/json, not ${JSON.stringify(type)}`);
  return null;
}

/** A review's request, checked: what the judge needs and what the answer echoes. */
interface Review {
  readonly uid: string;
  readonly operation: AdmissionOperation;
  readonly namespace: string;
  readonly name: string;
  readonly object: Ingress;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const OPERATIONS: readonly AdmissionOperation[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

/** readReview parses and checks an AdmissionReview for an Ingress; anything else is Refused (400). */
export function readReview(text: string): Review {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Refused(400, 'the body is not JSON');
  }
  if (!isRecord(body)) throw new Refused(400, 'the body is not a JSON object');
  if (body.apiVersion !== 'admission.k8s.io/v1' || body.kind !== 'AdmissionReview')
    throw new Refused(
      400,
      `expected an admission.k8s.io/v1 AdmissionReview, not ${JSON.stringify(body.apiVersion)} ` +
        `${JSON.stringify(body.kind)}`,
    );
  const request = body.request;
  if (!isRecord(request)) throw new Refused(400, 'the AdmissionReview has no request');
  const { uid, kind, operation } = request;
  if (typeof uid !== 'string' || uid === '') throw new Refused(400, 'request.uid is missing');
  if (!isRecord(kind) || kind.group !== 'networking.k8s.io' || kind.version !== 'v1' || kind.kind !== 'Ingress')
    throw new Refused(400, `request.kind must be networking.k8s.io/v1 Ingress, not ${JSON.stringify(kind)}`);
  if (!OPERATIONS.includes(operation as AdmissionOperation))
    throw new Refused(400, `request.operation ${JSON.stringify(operation)} is not one of ${OPERATIONS.join(', ')}`);
  const object = request.object;
  const judged = operation === 'CREATE' || operation === 'UPDATE';
  if (judged && !isRecord(object)) throw new Refused(400, `request.object is missing on ${operation}`);
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  return {
    uid,
    operation: operation as AdmissionOperation,
    namespace: str(request.namespace),
    name: str(request.name),
    object: (judged ? object : {}) as Ingress,
  };
}

/** answer is the AdmissionReview sent back: the request's uid, the verdict, ingress-nginx's 400 on a denial. */
export function answer(uid: string, verdict: Verdict) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: {
      uid,
      allowed: verdict.allowed,
      ...(verdict.allowed
        ? {}
        : { status: { status: 'Failure', code: 400, reason: 'BadRequest', message: verdict.message } }),
      ...(verdict.warnings.length > 0 ? { warnings: verdict.warnings } : {}),
    },
  };
}
