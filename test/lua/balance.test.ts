import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Backend, BackendPeer } from '../../src/model/pushed-tables.js';
import { call, type LuaNginx, type Pod, refusedPeer, startLuaNginx, startPod, tally } from './harness.js';

let nginx: LuaNginx;
let pods: Pod[];
let slow: Pod;
let version = 0;

beforeAll(async () => {
  nginx = await startLuaNginx();
  pods = await Promise.all([startPod('a', '127.0.0.2'), startPod('b', '127.0.0.3'), startPod('c', '127.0.0.4')]);
  slow = await startPod('slow', '127.0.0.3', 200);
});

afterAll(async () => {
  await nginx?.stop();
  await Promise.all([...(pods ?? []), slow].filter(Boolean).map((p) => p.close()));
});

const peers = (...names: string[]): BackendPeer[] => names.map((n) => pods.find((p) => p.name === n)!.peer);

async function push(...backends: Backend[]): Promise<string> {
  return (await nginx.control.pushBackends({ version: `v${++version}`, backends })).version;
}

const rr = (name: string, endpoints: BackendPeer[]): Backend => ({
  name,
  balance: 'round_robin',
  hashKey: null,
  endpoints,
});

describe('round robin', () => {
  test('spreads requests over every peer', async () => {
    await push(rr('web', peers('a', 'b', 'c')));
    const { backends, statuses } = await tally(nginx, '/to/web/', 60);
    expect(statuses.get(200)).toBe(60);
    expect([...backends.keys()].sort()).toEqual(['a', 'b', 'c']);
    // two workers, each strict round robin from its own offset: no peer far from a third
    for (const n of backends.values()) expect(n).toBeGreaterThanOrEqual(14);
  });
});

describe('chash', () => {
  const hashed = (endpoints: BackendPeer[]): Backend => ({
    name: 'sticky',
    balance: 'chash',
    hashKey: '$arg_user:$request_method',
    endpoints,
  });
  const users = Array.from({ length: 40 }, (_, i) => `u${i}`);
  const where = async (): Promise<Map<string, string>> => {
    const seen = new Map<string, string>();
    for (const u of users) {
      // several requests (new connections, either worker) per key: all must agree
      const answers = await Promise.all([1, 2, 3].map(() => call(nginx, `/to/sticky/?user=${u}`)));
      const names = new Set(answers.map((a) => a.backend));
      expect(names.size, `user ${u} went to ${[...names]}`).toBe(1);
      seen.set(u, answers[0]!.backend!);
    }
    return seen;
  };

  test('sends a key to one peer, and moves only the keys of peers that came or went', async () => {
    await push(hashed(peers('a', 'b')));
    const two = await where();
    expect(new Set(two.values())).toEqual(new Set(['a', 'b']));

    await push(hashed(peers('a', 'b', 'c')));
    const three = await where();
    for (const u of users) if (three.get(u) !== two.get(u)) expect(three.get(u)).toBe('c');
    expect([...three.values()]).toContain('c');

    // b goes: only b's keys move
    await push(hashed(peers('a', 'c')));
    const withoutB = await where();
    for (const u of users) if (three.get(u) !== 'b') expect(withoutB.get(u)).toBe(three.get(u));

    // the same peers again: the same ring, in every worker
    await push(hashed(peers('a', 'b')));
    expect(await where()).toEqual(two);
  });
});

describe('sticky', () => {
  test('a key keeps the peer it first reached while other peers come, and moves only when its peer goes', async () => {
    const sticky = (endpoints: BackendPeer[]): Backend => ({
      name: 'stick',
      balance: 'sticky',
      hashKey: '$arg_k',
      endpoints,
    });
    // keys like the affinity cookie's ($request_id: 32 hex digits), spread over the whole ring
    const keys = Array.from({ length: 30 }, (_, i) => createHash('md5').update(`client ${i}`).digest('hex'));
    const owners = () => Promise.all(keys.map((k) => call(nginx, `/to/stick/?k=${k}`).then((r) => r.backend!)));
    await push(sticky(peers('a', 'b')));
    const first = await owners();
    expect(new Set(first)).toEqual(new Set(['a', 'b']));
    // on a ring alone about a third of the keys would go to c
    await push(sticky(peers('a', 'b', 'c')));
    expect(await owners()).toEqual(first);
    await push(sticky(peers('b', 'c')));
    const moved = await owners();
    for (const [i, owner] of first.entries()) {
      if (owner === 'b') expect(moved[i], keys[i]).toBe('b');
      else expect(['b', 'c']).toContain(moved[i]);
    }
  });
});

describe('ewma', () => {
  test('prefers a fast peer over one 200 ms slower', async () => {
    await push({ name: 'lat', balance: 'ewma', hashKey: null, endpoints: [peers('a')[0]!, slow.peer] });
    slow.hits = 0;
    const a = pods.find((p) => p.name === 'a')!;
    a.hits = 0;
    const { statuses } = await tally(nginx, '/to/lat/', 60, 4);
    expect(statuses.get(200)).toBe(60);
    // each worker sends to the slow peer while it has no measurement of it (its first 200 ms: about
    // one request per lane), then keeps away; a random pick would send it about 30
    expect(slow.hits, `slow ${slow.hits}, fast ${a.hits}`).toBeLessThanOrEqual(12);
    expect(a.hits).toBeGreaterThanOrEqual(48);
  });
});

describe('retries', () => {
  test('a refused peer costs no request', async () => {
    const dead = await refusedPeer();
    for (const balance of ['round_robin', 'ewma'] as const) {
      await push({ name: 'flaky', balance, hashKey: null, endpoints: [dead, ...peers('a')] });
      const { statuses, backends } = await tally(nginx, '/to/flaky/', 30);
      expect(statuses.get(200), balance).toBe(30);
      expect(backends.get('a')).toBe(30);
    }
  });

  test('chash moves on along the ring when the key’s peer refuses', async () => {
    const dead = await refusedPeer();
    await push({ name: 'flakyhash', balance: 'chash', hashKey: '$request_uri', endpoints: [dead, ...peers('b')] });
    const { statuses } = await tally(nginx, '/to/flakyhash/', 20);
    expect(statuses.get(200)).toBe(20);
  });

  test('with every peer refusing the request fails after trying each once', async () => {
    const dead = [await refusedPeer(), await refusedPeer()];
    await push(rr('dead', dead));
    const a = await call(nginx, '/to/dead/');
    expect(a.status).toBe(502);
    const log = await nginx.errorLog();
    const tries = log.split('\n').filter((l) => l.includes('/to/dead/') && l.includes('connect() failed'));
    expect(tries.length).toBe(2);
  });
});

describe('no peer', () => {
  test('an unknown backend and an empty one answer 503, without touching a pod', async () => {
    await push(rr('empty', []), rr('web', peers('a')));
    const before = pods.map((p) => p.hits);
    expect((await call(nginx, '/to/empty/')).status).toBe(503);
    expect((await call(nginx, '/to/nosuch/')).status).toBe(503);
    expect(pods.map((p) => p.hits)).toEqual(before);
    expect((await call(nginx, '/to/web/')).status).toBe(200);
  });

  test('an IPv6 peer is reached', async () => {
    const v6 = await startPod('v6', '::1');
    try {
      await push(rr('six', [v6.peer]));
      expect((await call(nginx, '/to/six/')).backend).toBe('v6');
    } finally {
      await v6.close();
    }
  });

  test('a location that answers itself is not the balancer’s', async () => {
    expect((await call(nginx, '/self')).body).toBe('self\n');
  });

  test('the client cannot choose a peer: headers and Host change nothing', async () => {
    await push(rr('web', peers('a')));
    const b = pods.find((p) => p.name === 'b')!;
    const before = b.hits;
    const answer = await call(nginx, '/to/web/', { 'x-backend': 'b', host: `${b.peer.address}:${b.peer.port}` });
    expect(answer.backend).toBe('a');
    expect(b.hits).toBe(before);
  });
});

describe('a new table', () => {
  test('is seen by both workers on their next requests', async () => {
    await push(rr('moving', peers('a')));
    const first = await tally(nginx, '/to/moving/', 40);
    expect([...first.backends.keys()]).toEqual(['a']);
    expect(first.workers.size).toBe(2);

    await push(rr('moving', peers('b')));
    const started = Date.now();
    const second = await tally(nginx, '/to/moving/', 40);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(second.workers.size).toBe(2);
    expect([...second.backends.entries()]).toEqual([['b', 40]]);
  });
});
