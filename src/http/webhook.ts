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

/**
 * API_OBJECT_BYTES: the API server decodes no write request body over 3 MiB (k8s.io/apiserver's MaxRequestBodyBytes:
 * etcd's 1.5 MiB request limit, doubled for JSON's overhead over protobuf), so no Ingress it admits or stores is larger.
 */
const API_OBJECT_BYTES = 3 * 1024 * 1024;

/**
 * MAX_BODY_BYTES is the largest AdmissionReview read (7 MiB): the largest the API server sends for an Ingress is an
 * UPDATE's, with the object and the stored oldObject (each at most API_OBJECT_BYTES), plus 1 MiB for the rest
 * (userInfo, options). A larger body (ingress-nginx read 9 MiB, which took seconds to judge) is 413.
 */
export const MAX_BODY_BYTES = 2 * API_OBJECT_BYTES + 1024 * 1024;

/**
 * MAX_REVIEWS_IN_FLIGHT bounds the reviews being read, waiting or judged at once (one judged at a time, the rest held
 * as bytes): a review past it is answered 429 at once, before its body is read, with Retry-After, which the API
 * server's client retries within the webhook's timeoutSeconds and then treats per failurePolicy.
 */
export const MAX_REVIEWS_IN_FLIGHT = 4;

/** Judge answers for one candidate Ingress (the object after the operation). */
export type Judge = (operation: AdmissionOperation, ingress: Ingress) => Verdict;

/** ReviewHead is what the answer, the log and the metrics need of a review: everything but its object. */
export interface ReviewHead {
  readonly uid: string;
  readonly operation: AdmissionOperation;
  /** request.namespace and request.name */
  readonly namespace: string;
  readonly name: string;
  /** the object's own metadata.namespace and metadata.name, as ingress-nginx names its checks */
  readonly objectNamespace: string;
  readonly objectName: string;
}

/** Judged is one review body judged: the verdict, or the HTTP status and why it could not be judged. */
export type Judged =
  | { readonly ok: true; readonly review: ReviewHead; readonly verdict: Verdict; readonly testedSeconds: number }
  | { readonly ok: false; readonly status: number; readonly message: string; readonly error?: string };

/** ReviewJudge judges whole review bodies, unparsed (src/http/worker-judge.ts does so off the event loop). */
export interface ReviewJudge {
  review(body: Uint8Array): Promise<Judged>;
}

/** WebhookOptions are where the certificate and key come from (files, or a KeySource) and who judges. */
export interface WebhookOptions {
  readonly certFile?: string;
  readonly keyFile?: string;
  /** instead of the files: a pair kept in memory (the self-made certificate, src/http/webhook-self-signed.ts) */
  readonly keys?: KeySource;
  /** a Judge runs on the event loop (tests, benchmarks); the controller gives a ReviewJudge with a worker */
  readonly judge: Judge | ReviewJudge;
  /** MAX_REVIEWS_IN_FLIGHT unless set */
  readonly maxInFlight?: number;
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
export class Refused extends Error {
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
  const reviews = typeof options.judge === 'function' ? inProcess(options.judge) : options.judge;
  const gate = { inFlight: 0, limit: options.maxInFlight ?? MAX_REVIEWS_IN_FLIGHT };
  const server = createServer({ ...first, minVersion: 'TLSv1.2' }, (req, res) =>
    handle(req, res, { ...options, reviews, gate }),
  );
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

/** Handling is what each request is handled with: the options, the judge of bodies and the in-flight count. */
interface Handling extends WebhookOptions {
  readonly reviews: ReviewJudge;
  readonly gate: { inFlight: number; readonly limit: number };
}

function handle(req: IncomingMessage, res: ServerResponse, options: Handling): void {
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
  const { gate } = options;
  if (gate.inFlight >= gate.limit) {
    // Its body is discarded as it comes (nothing kept, nothing parsed), then answered: a client still uploading would
    // get a reset instead of the answer.
    req.resume();
    req.once('end', () =>
      refuse(new Refused(429, `${gate.limit} reviews are being read or judged already; retry`), { 'retry-after': '1' }),
    );
    req.on('error', () => res.destroy());
    return;
  }
  gate.inFlight++;
  let held = true;
  let judging = false;
  const release = () => {
    if (held) gate.inFlight--;
    held = false;
  };
  // An upload that ends early frees its place; one being judged holds it until the judge is done with it.
  res.once('close', () => {
    if (!judging) release();
  });
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    // Past the limit nothing more is kept; the answer closes the connection, which ends the upload.
    if (size > MAX_BODY_BYTES)
      refuse(new Refused(413, `the review is over ${MAX_BODY_BYTES} bytes, more than the API server sends`), {
        connection: 'close',
      });
    else chunks.push(chunk);
  });
  req.on('end', () => {
    if (size > MAX_BODY_BYTES) return;
    judging = true;
    const read = performance.now();
    options.reviews
      .review(Buffer.concat(chunks, size))
      .then((judged) => respond(res, judged, read, options, refuse))
      .catch((error: unknown) => {
        options.log.error({ err: error }, 'admission review failed');
        refuse(new Refused(500, 'the review could not be judged'));
      })
      .finally(release);
  });
  req.on('error', () => res.destroy());
}

/** respond writes a judged review's answer (or its refusal), logs it and tells the metrics. */
function respond(
  res: ServerResponse,
  judged: Judged,
  read: number,
  options: Handling,
  refuse: (error: Refused) => void,
): void {
  if (!judged.ok) {
    if (judged.error) options.log.error({ err: judged.error }, 'admission review failed');
    refuse(new Refused(judged.status, judged.message));
    return;
  }
  const { review, verdict } = judged;
  // Named as ingress-nginx names its checks: by the object's metadata.
  options.observe?.({
    namespace: review.objectNamespace || review.namespace,
    name: review.objectName || review.name,
    allowed: verdict.allowed,
    tested: verdict.tested,
    testedSeconds: judged.testedSeconds,
    roundtripSeconds: (performance.now() - read) / 1000,
  });
  options.log.info(
    {
      ingress: `${review.namespace}/${review.name}`,
      operation: review.operation,
      allowed: verdict.allowed,
      ms: Math.round(judged.testedSeconds * 10_000) / 10,
      ...(verdict.allowed ? {} : { reason: verdict.message }),
    },
    'admission review',
  );
  if (!res.headersSent)
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(review.uid, verdict)));
}

/**
 * judgeReview is one review body judged: parsed, checked as an AdmissionReview for an Ingress, and judged by `judge`;
 * what cannot be judged is a refusal (400; 500 when the judge threw, with its error for the log). Synchronous: the
 * in-process judge and the worker's (src/http/judge-worker.ts) both run it.
 */
export function judgeReview(body: Uint8Array, judge: Judge): Judged {
  try {
    const review = readReview(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
    const started = performance.now();
    const verdict = bounded(judge(review.operation, review.object));
    const testedSeconds = (performance.now() - started) / 1000;
    const meta = review.object.metadata ?? {};
    const head: ReviewHead = {
      uid: review.uid,
      operation: review.operation,
      namespace: review.namespace,
      name: review.name,
      objectNamespace: meta.namespace ?? '',
      objectName: meta.name ?? '',
    };
    return { ok: true, review: head, verdict, testedSeconds };
  } catch (error) {
    if (error instanceof Refused) return { ok: false, status: error.status, message: error.message };
    return { ok: false, status: 500, message: 'the review could not be judged', error: String(error) };
  }
}

/**
 * WARNINGS_CHARS: the API server passes on at most 4096 characters of warnings per request (from all webhooks; the
 * rest are dropped, Kubernetes' "Dynamic Admission Control"), so an answer carries no more.
 */
export const WARNINGS_CHARS = 4096;

/** DENIAL_CHARS bounds a denial's message: its first reasons, whole lines, then how many more there are. */
export const DENIAL_CHARS = 16 * 1024;

/** firstLines keeps the items of `items` while their total length stays within `chars`, and how many were left out. */
function firstLines(items: readonly string[], chars: number): { kept: string[]; left: number } {
  const kept: string[] = [];
  let total = 0;
  for (const item of items) {
    if (total + item.length > chars) break;
    kept.push(item);
    total += item.length + 1;
  }
  // the first one, however long, is there (cut)
  if (kept.length === 0 && items.length > 0) kept.push(items[0]!.slice(0, chars));
  return { kept, left: items.length - kept.length };
}

/**
 * bounded is a verdict whose warnings and denial message fit what the API server passes on: an Ingress with 25,000
 * faulty paths has 25,000 problems, whose full text would cost more to send and write than to find.
 */
export function bounded(verdict: Verdict): Verdict {
  const warnings = firstLines(verdict.warnings, WARNINGS_CHARS);
  const reasons = firstLines(verdict.message === '' ? [] : verdict.message.split('\n'), DENIAL_CHARS);
  if (warnings.left === 0 && reasons.left === 0) return verdict;
  return {
    ...verdict,
    warnings: warnings.left === 0 ? warnings.kept : [...warnings.kept, `and ${warnings.left} more warnings`],
    message: reasons.left === 0 ? verdict.message : [...reasons.kept, `and ${reasons.left} more reasons`].join('\n'),
  };
}

/** inProcess judges each body on the event loop, as it comes: for tests and benchmarks of the judge itself. */
export function inProcess(judge: Judge): ReviewJudge {
  return { review: async (body) => judgeReview(body, judge) };
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
