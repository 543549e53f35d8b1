/**
 * The status flags (ingress-nginx's names, defaults and Go-style booleans), and a controller
 * with `--update-status=false`: it still leads and records Events, but never writes a status.
 */
import { describe, expect, it } from 'vitest';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import type { StatusFlags } from '../../src/config.js';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { startCluster, waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

const status = (...argv: string[]): StatusFlags => {
  const parsed = parseControllerFlags(argv);
  if (!('config' in parsed)) throw new Error('help');
  expect(parsed.ignored).toEqual([]);
  return parsed.config.status;
};

describe('status flags', () => {
  it('default as ingress-nginx does', () => {
    expect(status()).toEqual({
      publishService: null,
      publishStatusAddress: [],
      updateStatus: true,
      updateStatusOnShutdown: true,
      electionId: 'ingress-controller-leader',
      electionTtlMs: 30_000,
    });
  });

  it('read every form', () => {
    expect(
      status(
        '--publish-service',
        'ingress/controller',
        '--publish-status-address=203.0.113.1, lb.example.com',
        '--update-status=false',
        '--update-status-on-shutdown',
        '--election-id',
        'my-leader',
        '--election-ttl',
        '10s',
      ),
    ).toEqual({
      publishService: 'ingress/controller',
      publishStatusAddress: ['203.0.113.1', 'lb.example.com'],
      updateStatus: false,
      updateStatusOnShutdown: true,
      electionId: 'my-leader',
      electionTtlMs: 10_000,
    });
    expect(status('--update-status', '--http-port', '8080').updateStatus).toBe(true);
  });

  it('refuse what they cannot mean', () => {
    expect(() => status('--update-status=maybe')).toThrow(/--update-status must be true or false/);
    expect(() => status('--publish-status-address', 'not an address')).toThrow(/neither an IP address nor a host name/);
    expect(() => status('--publish-service', 'no-namespace')).toThrow(/namespace\/name/);
    expect(() => status('--election-id', 'Bad_Name')).toThrow(/Lease name/);
    expect(() => status('--election-ttl', '0.5')).toThrow(/at least 1 second/);
  });
});

it('with --update-status=false the leader writes no status but still records Events', async () => {
  const statusWrites: string[] = [];
  const cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: 9 }]),
      ingress('web', { 'web.example.com': [{ path: '/', service: 'web' }] }),
      ingress('broken', { 'broken.example.com': [{ path: '/', service: 'missing' }] }),
    ],
    ['--update-status=false', '--publish-status-address', '203.0.113.5'],
    undefined,
    { onRequest: ({ method, url }) => method === 'PUT' && url.includes('/status') && statusWrites.push(url) },
  );
  try {
    const events = findResourceByKind('v1', 'Event')!;
    await waitFor(
      'an Event for the broken Ingress',
      () => cluster.api.registry.list(events, { namespace: 'default' }).items.length === 1,
      10_000,
    );
    expect(JSON.stringify(cluster.actor('status')?.value)).toContain('"status":"off"');
    await new Promise((r) => setTimeout(r, 500));
    expect(statusWrites).toEqual([]);
  } finally {
    await cluster.close();
  }
  expect(statusWrites).toEqual([]); // not on shutdown either
});
