/**
 * The webhook's bounds, over real HTTPS on loopback: reviews in flight past the bound are answered 429 with
 * Retry-After at once, while the judge still holds the others (a judge the test releases: no timing), and an answer
 * carries no more warnings or denial reasons than the API server passes on.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bounded,
  createWebhookServer,
  DENIAL_CHARS,
  type Judged,
  judgeReview,
  type ReviewJudge,
  WARNINGS_CHARS,
} from '../../src/http/webhook.js';
import { createLogger } from '../../src/log.js';
import type { KeyPair } from '../../src/tls/issue.js';
import { admissionReview, postAdmission, writeServingCertificate } from '../support/admission-review.js';
import { ingress } from '../support/manifests.js';

let dir: string;
let pair: KeyPair;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webhook-bounds-'));
  pair = await writeServingCertificate(dir);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const review = (uid: string) =>
  admissionReview(ingress(uid, { 'a.example.com': [{ path: '/', service: 'app' }] }), uid);
const post = (port: number, body: string) => postAdmission(port, pair.certPem, body);

describe('reviews in flight', () => {
  it('past the bound: 429 with Retry-After at once; the held ones are judged when the judge is free', async () => {
    const held: (() => void)[] = [];
    let arrived = 0;
    const allow = (operation: string) => ({ allowed: operation === 'CREATE', message: '', warnings: [] });
    // a judge that answers only when the test lets it
    const slow: ReviewJudge = {
      review: (body) =>
        new Promise<Judged>((resolve) => {
          arrived++;
          held.push(() => resolve(judgeReview(body, allow)));
        }),
    };
    const server = createWebhookServer({
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
      log: createLogger({ level: 'silent' }),
      judge: slow,
      maxInFlight: 2,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const first = post(port, review('one'));
      const second = post(port, review('two'));
      while (arrived < 2) await new Promise((r) => setTimeout(r, 10));
      const third = await post(port, review('three'));
      expect(third.status).toBe(429);
      expect(third.retryAfter).toBe('1');
      expect(third.body).toBe('2 reviews are being read or judged already; retry\n');
      expect(arrived).toBe(2);
      for (const release of held) release();
      for (const [answer, uid] of [
        [await first, 'one'],
        [await second, 'two'],
      ] as const) {
        expect(answer.status).toBe(200);
        expect(JSON.parse(answer.body).response).toEqual({ uid, allowed: true });
      }
      // their places are free again
      const fourth = post(port, review('four'));
      while (arrived < 3) await new Promise((r) => setTimeout(r, 10));
      held[2]?.();
      expect((await fourth).status).toBe(200);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('bounded', () => {
  const line = (i: number) => `default/x: spec.rules[0].http.paths[${i}].backend: Service default/app not found`;

  it('keeps the warnings the API server passes on, and says how many more there are', () => {
    const warnings = Array.from({ length: 25_000 }, (_, i) => line(i));
    const verdict = bounded({ allowed: true, message: '', warnings });
    const kept = verdict.warnings.slice(0, -1);
    expect(kept).toEqual(warnings.slice(0, kept.length));
    expect(kept.join('\n').length).toBeLessThanOrEqual(WARNINGS_CHARS);
    expect(kept.join('\n').length + 1 + line(kept.length).length).toBeGreaterThan(WARNINGS_CHARS);
    expect(verdict.warnings.at(-1)).toBe(`and ${25_000 - kept.length} more warnings`);
  });

  it("keeps a denial's first reasons, whole lines", () => {
    const reasons = Array.from({ length: 5_000 }, (_, i) => line(i));
    const verdict = bounded({ allowed: false, message: reasons.join('\n'), warnings: [] });
    const lines = verdict.message.split('\n');
    expect(lines.slice(0, -1)).toEqual(reasons.slice(0, lines.length - 1));
    expect(verdict.message.length).toBeLessThanOrEqual(DENIAL_CHARS + 40);
    expect(lines.at(-1)).toBe(`and ${5_000 - (lines.length - 1)} more reasons`);
  });

  it('leaves a verdict within the bounds as it is', () => {
    const verdict = { allowed: false, message: line(0), warnings: [line(1)] };
    expect(bounded(verdict)).toBe(verdict);
  });
});
