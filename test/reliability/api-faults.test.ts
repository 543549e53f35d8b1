/**
 * Faults of the Kubernetes API server, with the request loop running through nginx: a restart
 * (pause, writes while it is down, resume), every watch dropped (closed, then cut), history
 * compacted while watchers were away (they come back to 410 Gone and must relist, dropping what
 * was deleted meanwhile), and the server answering 500 to everything, then hanging every
 * request, for `apiErrorMs` each. The API state moves during each fault; afterwards the live
 * nginx.conf must equal render(buildModel(the API server's objects)) and be served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './harness.js';
import { profile } from './profile.js';

let h: Harness;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const watcherStates = () =>
  ['Ingress', 'Service', 'EndpointSlice', 'Secret', 'ConfigMap', 'IngressClass', 'Node']
    .map((kind) => JSON.stringify(h.cluster.actor(`watcher.${kind}`)?.value))
    .filter((state) => state !== '{"running":"watching"}');
// After an outage of N s the watchers' backoff (500 ms doubling, at most 30 s) may still be running.
const afterOutage = (ms: number) => 15_000 + Math.min(30_000, 2 * ms);

beforeAll(async () => {
  h = await Harness.start({ name: 'api-faults' });
}, 120_000);
afterAll(async () => h?.close(), 60_000);

describe('the API server', () => {
  it(`restarts ${profile.apiRestarts} times, with writes while it is down`, async () => {
    const from = h.records.length;
    for (let i = 0; i < profile.apiRestarts; i++) {
      const fault = h.begin('API server restart');
      await h.cluster.api.pause();
      await h.change('registry');
      await sleep(profile.apiDownMs);
      await h.change('registry');
      await h.cluster.api.resume();
      await fault.end(afterOutage(profile.apiDownMs));
    }
    h.expectSurvived(h.records.slice(from));
  });

  it(`drops every watch ${profile.watchDrops} times, closed and cut`, async () => {
    const from = h.records.length;
    for (let i = 0; i < profile.watchDrops; i++) {
      const abrupt = i % 2 === 1;
      const fault = h.begin(abrupt ? 'all watches cut' : 'all watches closed');
      const dropped = h.cluster.api.dropWatches({ abrupt });
      await h.change('client');
      const record = await fault.end(15_000, { detail: `${dropped} watches dropped` });
      // At least the Ingress watch; quiet kinds may be between reconnects (client-node waits 1 s,
      // doubling to 30 s, before it resumes a watch that ended without an event since).
      expect(dropped, record.kind).toBeGreaterThanOrEqual(1);
      await sleep(1_000);
    }
    h.expectSurvived(h.records.slice(from));
  });

  it(`compacts history ${profile.compactions} times while the watchers are away (410 Gone)`, async () => {
    const from = h.records.length;
    for (let i = 0; i < profile.compactions; i++) {
      // Away either because the server is down or because it refuses every request (503).
      const whileDown = i % 2 === 0;
      const fault = h.begin('history compacted (410 Gone)');
      h.cluster.api.watchSettings.goneAs = i % 4 < 2 ? 'event' : 'http';
      if (whileDown) await h.cluster.api.pause();
      else {
        h.cluster.api.failRequests({ status: 503 });
        h.cluster.api.dropWatches({ abrupt: true });
      }
      // Two changes, one of them creating or deleting an extra Ingress: a deletion missed for good
      // is found only by a relist.
      await h.change('registry');
      await h.change('registry');
      await sleep(300);
      h.cluster.api.compact();
      if (whileDown) await h.cluster.api.resume();
      else h.cluster.api.failRequests(null);
      await fault.end(afterOutage(1_000), {
        detail: `410 as ${h.cluster.api.watchSettings.goneAs}, ${whileDown ? 'after a restart' : 'after 503s'}`,
      });
    }
    h.cluster.api.watchSettings.goneAs = 'event';
    h.expectSurvived(h.records.slice(from));
  });

  for (const mode of ['500', 'hang'] as const) {
    it(
      `${mode === '500' ? 'answers 500 to every request' : 'hangs every request'} for ` +
        `${profile.apiErrorMs / 1000} s`,
      async () => {
        const from = h.records.length;
        const fault = h.begin(
          mode === '500'
            ? `API server answers 500 (${profile.apiErrorMs / 1000} s)`
            : `API server hangs (${profile.apiErrorMs / 1000} s)`,
        );
        h.cluster.api.failRequests(mode === '500' ? { status: 500 } : { hang: true });
        h.cluster.api.dropWatches({ abrupt: true });
        await sleep(profile.apiErrorMs / 2);
        await h.change('registry');
        await sleep(profile.apiErrorMs / 2);
        const away = watcherStates();
        const failed = h.cluster.api.failRequests(null);
        const record = await fault.end(afterOutage(profile.apiErrorMs), {
          detail:
            `${failed} requests ${mode === '500' ? 'answered 500' : 'held'}; watchers ` +
            `not watching at the end: ${away.length}`,
        });
        // The fault must have bitten: requests were refused and the watchers noticed.
        expect(failed, record.kind).toBeGreaterThan(0);
        if (mode === '500') expect(away.length, record.kind).toBeGreaterThan(0);
        h.expectSurvived(h.records.slice(from));
      },
    );
  }
});
