/**
 * The keyed tables' pushes (src/model/dynamic-tables.ts): the body of `POST /ingress-routes`, `/backends` and
 * `/certificates` is a delta on what nginx holds (the entries whose JSON changed, the keys gone) or a full replace when
 * nginx holds none or an unknown version; the table pushed before a reload keeps the hosts gone for the old workers; and no push names a profile the
 * running nginx.conf lacks (servableIngress). Table-driven.
 */
import { describe, expect, it } from 'vitest';
import {
  backendEntries,
  certificateEntries,
  ingressEntries,
  keyedBody,
  servableIngress,
  servedProfiles,
  tablesForReload,
} from '../../src/model/dynamic-tables.js';
import type { Backend, DynamicTables, IngressRouteTable, ServedCertificate } from '../../src/model/pushed-tables.js';

const P1 = '1'.repeat(32);
const P2 = '2'.repeat(32);
const host = (name: string, profile: string, path = '/') =>
  JSON.stringify({
    host: name,
    entries: [{ kind: 'prefix', path, profile, autoRedirect: false, internal: false }],
  });
const table = (version: string, hosts: Record<string, string>, profiles = [P1]): IngressRouteTable => ({
  version,
  hosts: new Map(Object.entries(hosts)),
  profiles: new Set(profiles),
});

const A = host('a.test', P1);
const A2 = host('a.test', P1, '/v2/');
const B = host('b.test', P1);
const C = host('c.test', P2);

describe('keyedBody of the Ingress route table', () => {
  it.each([
    ['nginx holds nothing: everything, as a full replace', null, { a: A, b: B }, null, [A, B], []],
    ['nginx holds an unknown version: a full replace', table('unknown:v1', { 'a.test': A }), { a: A }, null, [A], []],
    ['one host changed: only it', table('v1', { 'a.test': A, 'b.test': B }), { a: A2, b: B }, 'v1', [A2], []],
    ['one host gone: removed', table('v1', { 'a.test': A, 'b.test': B }), { a: A }, 'v1', [], ['b.test']],
    ['one host new: only it', table('v1', { 'a.test': A }), { a: A, b: B }, 'v1', [B], []],
    ['nothing changed: an empty delta', table('v1', { 'a.test': A }), { a: A }, 'v1', [], []],
  ] as const)('%s', (_what, held, next, base, set, remove) => {
    const hosts = Object.fromEntries(Object.values(next).map((json) => [JSON.parse(json).host, json]));
    const body = JSON.parse(keyedBody(ingressEntries(table('v2', hosts)), held && ingressEntries(held)));
    expect(body).toEqual({ version: 'v2', base, set: set.map((j) => JSON.parse(j)), remove });
  });
});

describe('keyedBody of the backends and certificates: by name, by Secret', () => {
  const backend = (name: string, port = 80): Backend => ({
    name,
    balance: 'round_robin',
    hashKey: null,
    endpoints: [{ address: '127.0.0.2', port }],
  });
  const certificate = (secret: string, hosts: string[]): ServedCertificate => ({
    secret,
    cert: 'CERT',
    key: 'KEY',
    hosts,
    servers: [],
  });
  it.each([
    ['an endpoint moved: that backend only', [backend('a'), backend('b')], [backend('a'), backend('b', 81)], ['b'], []],
    ['a backend gone', [backend('a'), backend('b')], [backend('a')], [], ['b']],
    ['equal backends made again: nothing', [backend('a')], [backend('a')], [], []],
  ] as const)('%s', (_what, before, after, set, remove) => {
    const held = backendEntries({ version: 'v1', backends: before });
    const body = JSON.parse(keyedBody(backendEntries({ version: 'v2', backends: after }), held));
    expect(body.base).toBe('v1');
    expect(body.set.map((b: Backend) => b.name)).toEqual(set);
    expect(body.remove).toEqual(remove);
  });
  it('a TLS host added to a Secret: that Secret only, with all its hosts', () => {
    const held = certificateEntries({
      version: 'c1',
      certificates: [certificate('ns/a', ['a.test']), certificate('ns/b', ['b.test'])],
    });
    const next = {
      version: 'c2',
      certificates: [certificate('ns/a', ['a.test', 'a2.test']), certificate('ns/b', ['b.test'])],
    };
    const body = JSON.parse(keyedBody(certificateEntries(next), held));
    expect(body).toEqual({ version: 'c2', base: 'c1', set: [next.certificates[0]], remove: [] });
  });
});

describe("tablesForReload's Ingress routes", () => {
  const tables = (ingress: IngressRouteTable): DynamicTables => ({
    backends: { version: 'b', backends: [] },
    certificates: { version: 'c', certificates: [] },
    routes: { version: 'r', servers: [] },
    ingress,
  });
  it.each([
    [
      'no host gone: the new table as it is',
      { 'a.test': A2, 'b.test': B, 'c.test': C },
      { 'a.test': A2, 'b.test': B, 'c.test': C },
      'v2',
    ],
    ['a host gone stays for the old workers', { 'a.test': A }, { 'a.test': A, 'b.test': B }, 'u-v2'],
  ] as const)('%s', (_what, next, expected, version) => {
    const previous = tables(table('v1', { 'a.test': A, 'b.test': B }, [P1]));
    const union = tablesForReload(tables(table('v2', next, [P1, P2])), previous).ingress!;
    expect(Object.fromEntries(union.hosts)).toEqual(expected);
    expect(union.version).toBe(version);
  });
});

describe('servableIngress: never a route to a profile the running nginx.conf lacks', () => {
  const held = table('v1', { 'a.test': A, 'b.test': B });
  it.each([
    [
      'every profile served: the table as it is',
      { 'a.test': A2, 'b.test': B, 'c.test': C },
      [P1, P2],
      { 'a.test': A2, 'b.test': B, 'c.test': C },
    ],
    [
      'a new host on a new profile stays out',
      { 'a.test': A, 'b.test': B, 'c.test': C },
      [P1],
      { 'a.test': A, 'b.test': B },
    ],
    [
      'a host moving to a new profile keeps what nginx holds',
      { 'a.test': host('a.test', P2), 'b.test': B },
      [P1],
      { 'a.test': A, 'b.test': B },
    ],
    ['a host no longer wanted goes, whatever the profiles', { 'a.test': A }, [], { 'a.test': A }],
  ] as const)('%s', (_what, next, serving, expected) => {
    const servable = servableIngress(table('v2', next, [P1, P2]), held, new Set(serving));
    expect(Object.fromEntries(servable.hosts)).toEqual(expected);
    expect(servable.version).toBe('v2');
  });

  it('reads the profiles an nginx.conf has', () => {
    const conf = `server {\n        location @ia_p_${P1} {\n        }\n        location = /x {\n        }\n    location @ia_p_${P2} {`;
    expect(servedProfiles(conf)).toEqual(new Set([P1, P2]));
  });
});
