/**
 * A leader election that cannot run (the Lease's namespace is missing, the API server refuses) is said at warn once
 * per distinct error, with the retry, not silently retried nor repeated at every retry; it then wins once it can.
 */
import { expect, it } from 'vitest';
import { startCluster, waitFor } from '../support/cluster.js';
import { ingressClass } from '../support/manifests.js';

it('warns once that it cannot take part in the election, then becomes the leader when the namespace comes', async () => {
  const lines: Record<string, unknown>[] = [];
  // --election-ttl 1: a retry every 133 ms, so a few seconds hold many retries
  const cluster = await startCluster([ingressClass()], ['--election-ttl', '1'], 'info', {
    env: { POD_NAME: 'ic-1', POD_NAMESPACE: 'not-yet' },
    logLines: lines,
  });
  try {
    const said = () => lines.filter((l) => l.msg === 'cannot take part in the leader election; trying again');
    await waitFor('the warning', async () => said().length > 0, 10_000);
    await waitFor('several retries', async () => Number(cluster.actor('status')?.context.retryInMs) > 0, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(said()).toHaveLength(1);
    expect(said()[0]).toMatchObject({ level: 40, lease: 'not-yet/ingress-controller-leader', identity: 'ic-1' });
    expect(said()[0]!.error).toBe('404 NotFound: namespaces "not-yet" not found');
    expect(said()[0]!.retryInMs).toBeGreaterThan(0);

    await cluster.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'not-yet' } });
    await waitFor('the leader', async () => lines.some((l) => l.msg === 'became the leader'), 10_000);
    expect(said()).toHaveLength(1);
  } finally {
    await cluster.close();
  }
}, 40_000);
