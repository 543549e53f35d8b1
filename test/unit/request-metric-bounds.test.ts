/**
 * The bounds of the request metrics (issue 27): `status` and `method` from bounded sets (monitor.lua and
 * request-labels.ts agree), the series budget (per Ingress, per namespace, the shared pool and the reserve it never
 * denies), the overflow counted per Ingress, the series of a deleted Ingress evicted, and the sliced /metrics text
 * sample for sample the same as prom-client's own. Drained text is fed as nginx's control channel answers it.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { NginxModel } from '../../src/model/nginx-model.js';
import { METHODS, methodLabel, STATUS_CODES, statusClass, statusLabel } from '../../src/http/request-labels.js';
import { SeriesBudget } from '../../src/http/series-budget.js';
import { setUpRequestMetrics } from '../support/request-metrics.js';

/** every three-character status nginx could log, and a few it cannot */
const ALL_STATUSES = [...Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0')), '', '1000', 'abc'];

describe('label values', () => {
  it('counts a registered status as itself and any other as its class, so 1,000 codes make at most 79 values', () => {
    const labels = new Set(ALL_STATUSES.map(statusLabel));
    expect(labels.size).toBe(STATUS_CODES.size + 9 + 1);
    for (const code of ['200', '204', '301', '404', '418', '429', '444', '499', '500', '503', '511'])
      expect(statusLabel(code)).toBe(code);
    expect(statusLabel('299')).toBe('2xx');
    expect(statusLabel('599')).toBe('5xx');
    expect(statusLabel('999')).toBe('9xx');
    expect(statusLabel('000')).toBe('other');
    expect(statusLabel('1000')).toBe('other');
    // ingress-nginx's dashboards: errors are status=~"[4-5].*"; alerts often status=~"5..": a class still matches
    for (const status of ALL_STATUSES) {
      const label = statusLabel(status);
      expect(/^[4-5]/.test(label), status).toBe(/^[4-5]\d\d$/.test(status));
    }
    // what monitor.lua already mapped stays as it is
    for (const label of labels) expect(statusLabel(label)).toBe(label);
    expect(statusClass('404')).toBe('4xx');
    expect(statusClass('9xx')).toBe('9xx');
    expect(statusClass('other')).toBe('other');
  });

  it('counts a standard method as itself and any other as OTHER', () => {
    expect(methodLabel('GET')).toBe('GET');
    expect(methodLabel('PROPFIND')).toBe('OTHER');
    expect(methodLabel('get')).toBe('OTHER');
    expect(METHODS.size).toBe(9);
  });

  it('has the same status codes and methods as monitor.lua, which maps them in nginx', async () => {
    const lua = await readFile(new URL('../../lua/ingress_actors/monitor.lua', import.meta.url), 'utf8');
    const codes = /local STATUSES = \{\}\nfor code in \(\[\[([\d\s]+)\]\]\)/.exec(lua)?.[1];
    expect(codes).toBeDefined();
    expect(new Set(codes!.trim().split(/\s+/))).toEqual(STATUS_CODES);
    const methods = /local METHODS = \{([^}]+)\}/.exec(lua)?.[1];
    expect(new Set([...methods!.matchAll(/([A-Z]+) = true/g)].map((m) => m[1]))).toEqual(METHODS);
  });
});

describe('SeriesBudget', () => {
  const limits = { total: 10, perIngress: 6, perNamespace: 8, reserved: 2 };

  it('caps each Ingress and each namespace', () => {
    const budget = new SeriesBudget(limits);
    for (let i = 0; i < 6; i++) expect(budget.admit('a/one', 'a')).toBeNull();
    expect(budget.admit('a/one', 'a')).toBe('ingress');
    expect(budget.admit('a/two', 'a')).toBeNull();
    expect(budget.admit('a/two', 'a')).toBeNull();
    expect(budget.admit('a/two', 'a')).toBe('namespace');
    // the namespace's cap holds for a new Ingress of it too: many Ingresses do not buy a tenant more
    expect(budget.admit('a/three', 'a')).toBe('namespace');
    expect(budget.size).toBe(8);
  });

  it('never denies a new Ingress its reserved series when the shared pool is full', () => {
    const budget = new SeriesBudget(limits);
    // b and c fill the pool: 2 reserved each, then 4 + 4 + 2 pooled
    for (let i = 0; i < 6; i++) expect(budget.admit('b/x', 'b')).toBeNull();
    for (let i = 0; i < 6; i++) expect(budget.admit('c/x', 'c')).toBeNull();
    for (let i = 0; i < 2; i++) expect(budget.admit('d/x', 'd')).toBeNull();
    for (let i = 0; i < 2; i++) expect(budget.admit('d/x', 'd')).toBeNull();
    expect(budget.admit('d/x', 'd')).toBe('total');
    // a good tenant's new Ingress: its first series still come
    expect(budget.admit('good/new', 'good')).toBeNull();
    expect(budget.admit('good/new', 'good')).toBeNull();
    expect(budget.admit('good/new', 'good')).toBe('total');
    // b's Ingress deleted: its pooled series are free again
    budget.release('b/x', 'b');
    expect(budget.countOf('b/x')).toBe(0);
    for (let i = 0; i < 4; i++) expect(budget.admit('good/new', 'good')).toBeNull();
    expect(budget.admit('good/new', 'good')).toBe('ingress');
  });
});

/** modelOf is the part of an NginxModel the request metrics read: servers, their locations' route hashes */
function modelOf(
  routes: { host: string; id: string; namespace: string; ingress: string; path?: string }[],
): NginxModel {
  const servers = routes.map((r) => ({
    host: r.host,
    locations: [
      {
        path: r.path ?? '/',
        route: { id: r.id, namespace: r.namespace, ingressName: r.ingress, serviceName: 'svc' },
      },
    ],
  }));
  return { defaultServer: { host: '_', locations: [] }, servers } as unknown as NginxModel;
}

/** drained is an answer of nginx's control channel: one line per label set, `n` requests each, one time observed */
const drained = (lines: { host: string; id: string; status: string; method: string; n?: number }[]) =>
  `left 0 dropped 0\n${lines.map((l) => `${l.host} ${l.id} ${l.status} ${l.method} 0\t0:${l.n ?? 1},2:${l.n ?? 1},13:0.001`).join('\n')}\n`;

function setUp(limits?: { maxSeries?: number; perIngress?: number; perNamespace?: number; reserved?: number }) {
  const { maxSeries, ...rest } = limits ?? {};
  return setUpRequestMetrics({ ...(maxSeries === undefined ? {} : { maxSeries }), limits: rest });
}

/** sampleLines are the text's sample lines, sorted (the families' order and blank lines aside) */
const sampleLines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .sort();

const value = (text: string, prefix: string) =>
  sampleLines(text)
    .filter((l) => l.startsWith(prefix))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);

describe('RequestMetrics', () => {
  const attacker = { host: 'evil.example', id: 'r1', namespace: 'tenant-a', ingress: 'flood' };
  const good = { host: 'good.example', id: 'r2', namespace: 'tenant-b', ingress: 'shop' };

  it('keeps the statuses and methods a backend and its clients send in bounded sets, and caps the Ingress', async () => {
    const { metrics, requests } = setUp();
    requests.setModel(modelOf([attacker, good]));
    const methods = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'PROPFIND', 'X'.repeat(40)];
    const lines = [];
    for (let status = 200; status < 1000; status++)
      for (const method of methods) lines.push({ ...attacker, status: String(status), method });
    requests.add(drained(lines));
    requests.add(drained([{ ...good, status: '200', method: 'GET', n: 3 }]));
    const text = await metrics.render();
    const counts = sampleLines(text).filter((l) => l.startsWith('nginx_ingress_controller_requests{'));
    const statuses = new Set(counts.map((l) => /status="([^"]*)"/.exec(l)![1]!));
    for (const s of statuses) expect(STATUS_CODES.has(s) || /^[2-9]xx$/.test(s), s).toBe(true);
    const seen = new Set(counts.map((l) => /method="([^"]*)"/.exec(l)![1]!));
    for (const m of seen) expect(METHODS.has(m) || m === 'OTHER', m).toBe(true);
    expect(counts.filter((l) => l.includes('ingress="flood"')).length).toBe(500);
    expect(counts.filter((l) => l.includes('ingress="shop"'))).toHaveLength(1);
    // every request is in a series or in its Ingress's overflow count
    const overflow = value(text, 'ingress_actors_request_metrics_overflow_total{namespace="tenant-a",ingress="flood"');
    expect(value(text, 'nginx_ingress_controller_requests{') + overflow).toBe(lines.length + 3);
    expect(overflow).toBeGreaterThan(0);
  });

  it("gives a good tenant's new Ingress its series when others have filled the shared pool", async () => {
    const { metrics, requests } = setUp({ maxSeries: 40, perIngress: 30, perNamespace: 100, reserved: 5 });
    const floods = [1, 2, 3].map((i) => ({
      host: `f${i}.example`,
      id: `f${i}`,
      namespace: 'tenant-a',
      ingress: `f${i}`,
    }));
    requests.setModel(modelOf(floods));
    for (const f of floods)
      requests.add(drained([...STATUS_CODES].slice(0, 60).map((status) => ({ ...f, status, method: 'GET' }))));
    expect(requests.size).toBe(40 + 3 * 5);
    // the good tenant's Ingress arrives after the pool is full
    requests.setModel(modelOf([...floods, good]));
    requests.add(drained([{ ...good, status: '200', method: 'GET', n: 7 }]));
    const text = await metrics.render();
    expect(
      value(text, 'nginx_ingress_controller_requests{status="200",method="GET",path="/",namespace="tenant-b"'),
    ).toBe(7);
    // the flood's Ingresses deleted: their series go, and their room is the others' again
    requests.setModel(modelOf([good]));
    expect(requests.size).toBe(1);
    const after = await metrics.render();
    expect(after).not.toContain('tenant-a');
    // an old worker's last report for a deleted Ingress does not bring its series back
    requests.add(drained([{ ...floods[0]!, status: '200', method: 'GET' }]));
    expect(requests.size).toBe(1);
  });

  it('writes /metrics in slices with the same samples as prom-client renders them', async () => {
    const { metrics, requests } = setUp({ perIngress: 5_000 });
    // a regex path whose label value needs escapes
    requests.setModel(modelOf([{ ...attacker, path: '/a"b\\c' }]));
    const lines = [];
    for (const status of STATUS_CODES)
      for (const method of METHODS) lines.push({ ...attacker, status, method, n: status.length });
    requests.add(drained(lines));
    let slices = 0;
    for await (const _ of metrics.text()) slices++;
    expect(slices).toBeGreaterThan(10);
    const ours = sampleLines(await metrics.render());
    const theirs = sampleLines(await metrics.registry.metrics());
    expect(ours.length).toBeGreaterThan(STATUS_CODES.size * METHODS.size * 10);
    expect(ours).toEqual(theirs);
  });
});
