/**
 * The Lua a request passes (router, balancer, request metrics) runs compiled by LuaJIT, through the real controller and
 * its nginx at default flags. resty.core's ngx.var reads, ngx.now and ngx.req.start_time end in a tail call LuaJIT
 * cannot compile as a trace's end; it blacklists them after a few tries, and from then on every trace that reaches
 * them aborts, which left the whole request path to the interpreter (issue 29's data plane: about 10 µs a request).
 * lua/ingress_actors/accessors.lua reads them in a form LuaJIT compiles, and the hot functions keep loops out of the
 * common path. A copied template starts LuaJIT's own trace log (jit.v) in nginx; the test reads which traces aborted.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';

/** the modules every request of an Ingress host passes */
const REQUEST_PATH = ['accessors.lua', 'ingress_router.lua', 'balancer.lua', 'round_robin.lua', 'monitor.lua'];
/** resty.core's files whose accessors the request path must not call (jit.v names a file without its folder) */
const RESTY_ACCESSORS = ['var.lua', 'time.lua', 'request.lua'];

/** tracedNginx writes a template whose nginx logs LuaJIT's traces (jit.v) to `log`. */
async function tracedNginx(dir: string, log: string): Promise<string> {
  const templates = join(dir, 'templates');
  await cp(new URL('../../templates/', import.meta.url).pathname, templates, { recursive: true });
  const file = join(templates, 'nginx.conf.hbs');
  const text = await readFile(file, 'utf8');
  const hooked = text.replace('init_by_lua_block { ', `init_by_lua_block { require("jit.v").start("${log}") `);
  if (hooked === text) throw new Error('the template has no init_by_lua_block to hook');
  await writeFile(file, hooked);
  return file;
}

/** Abort is a trace LuaJIT gave up: the file it started in and why. */
interface Abort {
  readonly file: string;
  readonly reason: string;
}

/** aborts reads jit.v's log: `[TRACE --- (12/3) monitor.lua:115 -- inner loop in root trace at monitor.lua:107]` */
async function aborts(log: string): Promise<Abort[]> {
  const text = await readFile(log, 'utf8');
  return [...text.matchAll(/^\[TRACE --- (?:\(\d+\/\d+\) )?([^:\s]+):\d+ -- (.*)\]$/gm)].map((m) => ({
    file: m[1]!,
    reason: m[2]!,
  }));
}

const agent = new Agent({ keepAlive: true, maxSockets: 8 });

/** hammer sends `n` requests, 8 at a time on kept-alive connections; it throws on any answer but 200. */
async function hammer(port: number, host: string, path: string, n: number, body?: string): Promise<void> {
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = request({ port, host: '127.0.0.1', path, agent, method: body ? 'POST' : 'GET', headers: { host } });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`${host}${path}: ${res.statusCode}`)),
        );
      });
      req.on('error', reject);
      req.end(body);
    });
  let sent = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (sent < n) {
        sent++;
        await one();
      }
    }),
  );
}

let cluster: Cluster;
let scratch: string;
let backend: Backend;
let log: string;

describe('the request path compiled by LuaJIT', () => {
  beforeAll(async () => {
    backend = await startBackend('web');
    scratch = await mkdtemp(join(tmpdir(), 'ia-jit-'));
    log = join(scratch, 'jit.log');
    cluster = await startCluster(
      [
        ingressClass(),
        ...serviceWithEndpoints('web', [{ port: backend.port }]),
        ingress('plain', { 'plain.test': [{ path: '/', service: 'web' }] }),
        // more than one prefix: the router walks the URI's prefixes (a loop: route() is left to the interpreter)
        ingress('paths', {
          'paths.test': [
            { path: '/', service: 'web' },
            { path: '/api', service: 'web' },
          ],
        }),
        // a profile of its own: the router jumps to its named location
        ingress(
          'timeouts',
          { 'timeouts.test': [{ path: '/', service: 'web' }] },
          { annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '30' } },
        ),
      ],
      ['--template', await tracedNginx(scratch, log)],
    );
    await waitFor(
      'the three hosts served',
      async () => {
        for (const host of ['plain.test', 'paths.test', 'timeouts.test'])
          if ((await get({ host, path: '/', port: cluster.httpPort })).status !== 200) return false;
        return true;
      },
      20_000,
      50,
    );
  }, 40_000);

  afterAll(async () => {
    agent.destroy();
    await cluster?.close();
    await backend?.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('compiles every trace of a plain host’s requests: none aborted, none blacklisted', async () => {
    await hammer(cluster.httpPort, 'plain.test', '/page', 4_000);
    const given = await aborts(log);
    // LuaJIT did trace the request path (the hook works): a request's modules appear in the log
    expect(await readFile(log, 'utf8')).toMatch(
      /\[TRACE +\d+ (?:\(\d+\/\d+\) )?(?:ingress_router|monitor|balancer)\.lua:/,
    );
    expect(given.filter((a) => REQUEST_PATH.includes(a.file) || RESTY_ACCESSORS.includes(a.file))).toEqual([]);
    expect(given.filter((a) => a.reason.includes('blacklisted'))).toEqual([]);
  }, 60_000);

  it('keeps the accessors, the balancer and the metrics compiled whatever else the traffic makes the router do', async () => {
    await hammer(cluster.httpPort, 'paths.test', '/api/items', 2_000);
    await hammer(cluster.httpPort, 'timeouts.test', '/slow', 2_000);
    await hammer(cluster.httpPort, 'plain.test', '/form', 1_000, 'a=1');
    const given = await aborts(log);
    const kept = REQUEST_PATH.filter((f) => f !== 'ingress_router.lua').concat(RESTY_ACCESSORS);
    expect(given.filter((a) => kept.includes(a.file))).toEqual([]);
    expect(
      given.filter((a) =>
        /blacklisted at (?:accessors|monitor|balancer|round_robin|var|time|request)\.lua/.test(a.reason),
      ),
    ).toEqual([]);
  }, 60_000);
});
