/**
 * lua/ingress_actors/tracing.lua's checks and ids inside a real nginx (two workers, each seeded from /dev/urandom in
 * init_worker as the template does): which traceparent and tracestate values are taken, at W3C's bounds exactly, and
 * ids that are well-formed, never all zero and distinct across workers. The headers' path through a controller's
 * nginx is test/controller/tracing.test.ts.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nginxBinary } from '../../src/nginx/binary.js';
import { freePort, get, waitForPort } from '../support/net.js';
import { luaNginxConf } from '../support/lua-nginx-conf.js';

let dir: string;
let port: number;
let pid: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-tracing-lua-'));
  await mkdir(join(dir, 'tmp'));
  port = await freePort();
  const conf = join(dir, 'nginx.conf');
  await writeFile(
    conf,
    await luaNginxConf(
      `    lua_shared_dict ia_spans 1m;
    init_worker_by_lua_block { require("ingress_actors.tracing").init_worker(1, false) }
    server {
        listen 127.0.0.1:${port};
        location = /traceparent {
            content_by_lua_block {
                local t, p, s = require("ingress_actors.tracing").trusted(ngx.req.get_headers()["x-value"])
                ngx.say(t and (t .. " " .. p .. " " .. tostring(s)) or "refused")
            }
        }
        location = /tracestate {
            content_by_lua_block {
                ngx.say(require("ingress_actors.tracing").valid_tracestate(ngx.req.get_headers()["x-value"]) and "taken" or "refused")
            }
        }
        location = /ids {
            content_by_lua_block {
                local tracing = require("ingress_actors.tracing")
                for _ = 1, 500 do ngx.say(ngx.worker.pid(), " ", tracing.trace_id(), " ", tracing.span_id()) end
            }
        }
    }`,
      { workers: 2, errorLevel: 'warn' },
    ),
  );
  await new Promise<void>((resolve, reject) =>
    spawn(nginxBinary(), ['-p', dir, '-c', conf], { stdio: 'ignore' }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`nginx exited ${code}`)),
    ),
  );
  await waitForPort(port);
  pid = Number((await readFile(join(dir, 'nginx.pid'), 'utf8')).trim());
});

afterAll(async () => {
  if (pid) process.kill(pid, 'SIGQUIT');
  await new Promise((resolve) => setTimeout(resolve, 300));
  await rm(dir, { recursive: true, force: true });
});

const ask = async (path: string, value: string) =>
  (await get({ host: 'x', path, port, headers: { 'x-value': value } })).body.trim();

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('traceparent', () => {
  it.each([
    [`00-${TRACE}-${PARENT}-01`, `${TRACE} ${PARENT} true`],
    [`00-${TRACE}-${PARENT}-00`, `${TRACE} ${PARENT} false`],
    // a future version is read in its version-00 form only: 55 characters, the flags' low bit the sampled flag
    [`7f-${TRACE}-${PARENT}-03`, `${TRACE} ${PARENT} true`],
    [`00-${TRACE}-${PARENT}-02`, `${TRACE} ${PARENT} false`],
  ])('takes %s', async (value, expected) => {
    expect(await ask('/traceparent', value)).toBe(expected);
  });

  it.each([
    `ff-${TRACE}-${PARENT}-01`,
    `00-${'0'.repeat(32)}-${PARENT}-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `00-${TRACE.toUpperCase()}-${PARENT}-01`,
    `00-${TRACE}-${PARENT}-01-`,
    `00-${TRACE}-${PARENT}-1`,
    `00-${TRACE}0-${PARENT}-1`,
    `0-${TRACE}-${PARENT}-011`,
    ` 00-${TRACE}-${PARENT}-0`,
    `00-${TRACE}-${PARENT}+01`,
    '',
    'x'.repeat(8000),
  ])('refuses %s', async (value) => {
    expect(await ask('/traceparent', value)).toBe('refused');
  });
});

describe('tracestate', () => {
  const members = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=v`).join(',');
  const longest = `${'a'.repeat(256)}=${'v'.repeat(255)}`; // 512 characters: W3C's longest member, alone

  it.each([
    'rojo=00f067aa0ba902b7',
    'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE',
    ' rojo=1 ,\tcongo=2\t',
    'tenant@vendor=x y',
    `${'a'.repeat(241)}@${'b'.repeat(14)}=v`,
    'k=!"#$%&\'()*+-./:;<>?@[\\]^_`{|}~',
    members(32),
    longest,
    // blanks after a member are its optional white space (nginx trims the header's own)
    'k=v ',
  ])('takes %s', async (value) => {
    expect(await ask('/tracestate', value)).toBe('taken');
  });

  it.each([
    members(33),
    `${longest},k=v`,
    `${'a'.repeat(257)}=v`,
    `${'a'.repeat(242)}@b=v`,
    `a@${'b'.repeat(15)}=v`,
    'Rojo=1',
    '1@vendor=x,',
    'k=v,',
    ',k=v',
    'k=',
    '=v',
    'k=v=w',
    'k=a,b',
    'k==v',
    '',
  ])('refuses %s', async (value) => {
    expect(await ask('/tracestate', value)).toBe('refused');
  });
});

describe('ids', () => {
  it('are lowercase hex of their length, never all zero, and distinct', async () => {
    const lines: string[] = [];
    for (let i = 0; i < 20; i++) lines.push(...(await get({ host: 'x', path: '/ids', port })).body.trim().split('\n'));
    const traces = new Set<string>();
    const spans = new Set<string>();
    const workers = new Set<string>();
    for (const line of lines) {
      const [worker, trace, span] = line.split(' ') as [string, string, string];
      workers.add(worker);
      expect(trace).toMatch(/^[0-9a-f]{32}$/);
      expect(span).toMatch(/^[0-9a-f]{16}$/);
      expect(trace).not.toBe('0'.repeat(32));
      expect(span).not.toBe('0'.repeat(16));
      traces.add(trace);
      spans.add(span);
    }
    expect(traces.size).toBe(lines.length);
    expect(spans.size).toBe(lines.length);
    // whichever of the workers made them (each generator seeded on its own from /dev/urandom)
    expect(workers.size).toBeGreaterThanOrEqual(1);
  });
});
