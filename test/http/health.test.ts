/**
 * The /healthz verdict as a pure function of actor snapshots (the shapes the machines really
 * have), the body it turns into for loopback and for remote clients, and which socket addresses
 * count as loopback. The e2e side (real controller, real nginx) is healthz-metrics.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { NginxProcessContext } from '../../machines/nginxProcess.machine.js';
import { checkHealth, healthText, isLoopbackAddress } from '../../src/http/health.js';
import { nginxSnapshot, observedActors, watcherSnapshot, type Snapshots } from '../support/observed.js';

const NGINX_T =
  'nginx: [emerg] unknown "no_such_variable" variable\nnginx: configuration file /tmp/ia/nginx.conf test failed';
const watcher = (synced: boolean, value: unknown = { running: 'watching' }, lastError: string | null = null) =>
  watcherSnapshot(value, { reportedSynced: synced, lastError });
const nginx = (value: unknown, context: Partial<NginxProcessContext>) => nginxSnapshot(value, context);
const running = { alive: 'running' };
const TABLES = { backends: { version: 'b1' }, certificates: { version: 'c1' } };
/** a restarted master (pid 4242) that holds no table yet: the push to it failed */
const NO_TABLE_YET = nginx(running, {
  reloadsOk: 1,
  pid: 4242,
  tables: TABLES,
  pushed: null,
  pushFailuresInRow: 1,
  lastPushError: 'POST /backends: no answer within 5000 ms',
});

function world(actors: Snapshots) {
  const all: Snapshots = {
    root: { value: 'running', status: 'active' },
    'watcher.Ingress': watcher(true),
    'watcher.Service': watcher(true),
    ...actors,
  };
  return checkHealth(observedActors(all), ['Ingress', 'Service']);
}

describe('finding 2: /healthz stays 200 while nginx serves the last good config', () => {
  it.each([
    [
      'a refused reload after a good one: ok, with a warning',
      { nginx: nginx(running, { reloadsOk: 3, reloadsFailed: 1, lastReloadError: NGINX_T }) },
      true,
      [],
      ['the last reload failed; nginx serves the last good config'],
    ],
    [
      'a refused reload while the next one runs: ok, with a warning',
      { nginx: nginx({ alive: 'reloading' }, { reloadsOk: 1, reloadsFailed: 2, lastReloadError: NGINX_T }) },
      true,
      [],
      ['the last reload failed; nginx serves the last good config'],
    ],
    ['all good', { nginx: nginx(running, { reloadsOk: 1 }) }, true, [], []],
    [
      'a success after a failure clears it',
      { nginx: nginx(running, { reloadsOk: 2, reloadsFailed: 1, lastReloadError: null }) },
      true,
      [],
      [],
    ],
    [
      'before the first sync: 500',
      { nginx: nginx(running, {}) },
      false,
      ['no configuration from the cluster applied yet'],
      [],
    ],
    [
      'the first config from the cluster refused: 500 (nginx serves only the empty boot config)',
      { nginx: nginx(running, { reloadsFailed: 1, lastReloadError: NGINX_T }) },
      false,
      ['no configuration from the cluster applied yet'],
      [],
    ],
    [
      'nginx died: 500',
      { nginx: nginx('died', { reloadsOk: 4, lastExit: { pid: 1, code: null, signal: 'SIGKILL', error: null } }) },
      false,
      ['nginx is not running'],
      [],
    ],
    [
      'nginx died after a refused reload: 500, and the warning',
      { nginx: nginx('draining', { reloadsOk: 4, lastReloadError: NGINX_T }) },
      false,
      ['nginx is not running'],
      ['the last reload failed; nginx serves the last good config'],
    ],
    ['no nginx actor: 500', { nginx: undefined }, false, ['nginx is not running'], []],
    [
      'pushing an endpoint change to the table nginx holds: ok (the master serves on)',
      { nginx: nginx({ alive: 'pushing' }, { reloadsOk: 1, tables: TABLES, pushed: TABLES }) },
      true,
      [],
      [],
    ],
    [
      'pushing the first table to a restarted master: 500',
      { nginx: nginx({ alive: 'pushing' }, { reloadsOk: 1, tables: TABLES, pushed: null }) },
      false,
      ['nginx has no backend table yet; pushing it'],
      [],
    ],
    [
      'issue 27: a push nginx refused while it holds the earlier tables: ok, with a warning (retried)',
      {
        nginx: nginx(running, {
          reloadsOk: 1,
          tables: TABLES,
          pushed: { ...TABLES, backends: { version: 'b0' } },
          pushFailuresInRow: 2,
          lastPushError: 'POST /routes: nginx answered 400: route 3: label too long',
        }),
      },
      true,
      [],
      ['the last push of the tables to nginx failed; nginx serves the tables it took before; retrying'],
    ],
    [
      'issue 27: a push that failed on a restarted master, which holds no table yet: 500',
      {
        nginx: NO_TABLE_YET,
      },
      false,
      ['nginx has no backend table yet; pushing it'],
      [],
    ],
    [
      'a watcher not synced: 500',
      { nginx: nginx(running, { reloadsOk: 1 }), 'watcher.Service': watcher(false, { running: 'listing' }) },
      false,
      ['watcher Service has not synced yet'],
      [],
    ],
    [
      'finding 7: a watcher failing after its first sync: ok, with a warning',
      {
        nginx: nginx(running, { reloadsOk: 1 }),
        'watcher.Service': watcherSnapshot('backoff', {
          reportedSynced: true,
          staleSince: Date.UTC(2030, 0, 2, 3, 4, 5),
          failures: 2,
          lastError: 'list Service: the API server did not answer within 30000 ms',
        }),
      },
      true,
      [],
      ['watcher Service is not watching since 2030-01-02T03:04:05.000Z; serving what it last saw'],
    ],
    [
      'booting: 500',
      { root: { value: 'booting', status: 'active' }, nginx: nginx(running, { reloadsOk: 1 }) },
      false,
      ['booting: the template is not loaded yet'],
      [],
    ],
  ] as const)('%s', (_what, actors, ok, problems, warnings) => {
    const health = world(actors);
    expect(health.ok).toBe(ok);
    expect(health.problems.map((p) => p.summary)).toEqual(problems);
    expect(health.warnings.map((w) => w.summary)).toEqual(warnings);
  });

  it('writes ok, then the warning with the nginx -t output on one line, for the local admin', () => {
    const health = world({ nginx: nginx(running, { reloadsOk: 3, reloadsFailed: 1, lastReloadError: NGINX_T }) });
    expect(healthText(health, true)).toBe(
      'ok\nwarning: the last reload failed: nginx: [emerg] unknown "no_such_variable" variable nginx: configuration ' +
        'file /tmp/ia/nginx.conf test failed (nginx serves the last good config)\n',
    );
  });
});

describe('issue 27: /healthz says why the tables fail it, or why they only warn', () => {
  it('names the restarted master that holds no table and the last push error; a refused push on earlier tables is a warning', () => {
    const noTables = world({
      nginx: NO_TABLE_YET,
    });
    expect(healthText(noTables, true)).toBe(
      'nginx has no backend table yet; pushing it (no table pushed since this nginx master (pid 4242) started; ' +
        'the last push failed: POST /backends: no answer within 5000 ms)\n',
    );
    const refused = world({
      nginx: nginx(running, {
        reloadsOk: 1,
        tables: TABLES,
        pushed: { ...TABLES, certificates: { version: 'c0' } },
        pushFailuresInRow: 1,
        lastPushError: 'POST /certificates: nginx answered 400: certificate 2: bad key',
      }),
    });
    expect(healthText(refused, true)).toBe(
      'ok\nwarning: the last push of the tables failed: POST /certificates: nginx answered 400: certificate 2: bad ' +
        'key (nginx serves the tables it took before; retrying)\n',
    );
    // The short reason for remote clients names no object.
    expect(healthText(refused, false)).toBe(
      'ok\nwarning: the last push of the tables to nginx failed; nginx serves the tables it took before; retrying\n',
    );
  });
});

describe('/healthz detail: nginx -t output and API errors only for loopback clients', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.255.3.4', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['10.0.0.7', false],
    ['192.168.1.127', false],
    ['::ffff:10.1.2.3', false],
    ['fe80::1', false],
    ['::', false],
    ['0.0.0.0', false],
    ['128.0.0.1', false],
    ['127.0.0', false],
    ['127.0.0.256', false],
    ['127.0.0.1.5', false],
    ['', false],
    [undefined, false],
    [`127.${'0'.repeat(100)}.0.1`, false],
  ] as const)('%s is loopback: %s', (address, loopback) => {
    expect(isLoopbackAddress(address)).toBe(loopback);
  });

  it('gives a remote client the short reasons only, the local admin the detail', () => {
    const health = world({
      nginx: nginx('died', {
        reloadsOk: 2,
        lastReloadError: NGINX_T,
        lastExit: { pid: 9, code: 1, signal: null, error: null },
      }),
      'watcher.Service': watcher(false, 'backoff', 'connect ECONNREFUSED 10.96.0.1:443'),
    });
    expect(healthText(health, false)).toBe(
      'watcher Service has not synced yet\nnginx is not running\nwarning: the last reload failed; nginx serves the ' +
        'last good config\n',
    );
    const local = healthText(health, true);
    expect(local).toContain(
      'watcher Service has not synced yet (state backoff, last error: connect ECONNREFUSED 10.96.0.1:443)',
    );
    expect(local).toContain('nginx is not running (state died, last exit: code 1)');
    expect(local).toContain('no_such_variable');
  });
});
