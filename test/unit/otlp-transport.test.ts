/**
 * src/http/otlp-transport.ts against a loopback collector: the body posted as protobuf, 2xx accepted, a refusal not
 * retried, 429/502/503/504 retried after Retry-After, a timed-out or absent collector retried within the deadline only.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { OtlpTransport, retryAfterMs } from '../../src/http/otlp-transport.js';
import { freePort } from '../support/net.js';

interface Collector {
  readonly url: string;
  readonly bodies: Buffer[];
  readonly types: string[];
  close(): Promise<void>;
}

/** collector answers each POST by `answer(n)` (n counts from 0): a status and headers, or 'hang' */
async function collector(answer: (n: number) => [number, Record<string, string>?] | 'hang'): Promise<Collector> {
  const bodies: Buffer[] = [];
  const types: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reply = answer(bodies.length);
      bodies.push(Buffer.concat(chunks));
      types.push(req.headers['content-type'] ?? '');
      if (reply !== 'hang') res.writeHead(reply[0], reply[1]).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}/v1/traces`,
    bodies,
    types,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) await o.close();
});

function transport(url: string, timeoutMs: number): OtlpTransport {
  const t = new OtlpTransport(url, timeoutMs, 'ingress-actors/test');
  open.push(t);
  return t;
}

describe('OtlpTransport.send', () => {
  it('posts the body (its parts one after the other) as protobuf and takes a 2xx', async () => {
    const c = await collector(() => [200]);
    open.push(c);
    const body = [Buffer.from([0x0a, 0x02]), Buffer.from([0x0a, 0x00])];
    expect(await transport(c.url, 5_000).send(body)).toEqual({ ok: true });
    expect(c.bodies).toEqual([Buffer.concat(body)]);
    expect(c.types).toEqual(['application/x-protobuf']);
  });

  it('does not retry a refusal', async () => {
    const c = await collector(() => [400]);
    open.push(c);
    expect(await transport(c.url, 5_000).send([Buffer.from('x')])).toEqual({ ok: false, error: 'HTTP 400' });
    expect(c.bodies).toHaveLength(1);
  });

  it.each([429, 502, 503, 504])('retries a %i after Retry-After', async (status) => {
    const c = await collector((n) => (n < 2 ? [status, { 'retry-after': '0' }] : [200]));
    open.push(c);
    expect(await transport(c.url, 5_000).send([Buffer.from('x')])).toEqual({ ok: true });
    expect(c.bodies).toHaveLength(3);
  });

  it('gives up when the next retry would pass the deadline', async () => {
    const c = await collector(() => [503, { 'retry-after': '3' }]);
    open.push(c);
    expect(await transport(c.url, 2_000).send([Buffer.from('x')])).toEqual({ ok: false, error: 'HTTP 503' });
    expect(c.bodies).toHaveLength(1);
  });

  it('stops at 5 retries', async () => {
    const c = await collector(() => [503, { 'retry-after': '0' }]);
    open.push(c);
    expect(await transport(c.url, 5_000).send([Buffer.from('x')])).toEqual({ ok: false, error: 'HTTP 503' });
    expect(c.bodies).toHaveLength(6);
  });

  it('times out a collector that does not answer, within the deadline', async () => {
    const c = await collector(() => 'hang');
    open.push(c);
    // the first attempt takes the whole deadline: no time is left for a retry
    expect(await transport(c.url, 300).send([Buffer.from('x')])).toEqual({ ok: false, error: 'timed out' });
    expect(c.bodies).toHaveLength(1);
  });

  it('retries a collector that is not listening, after a backoff of about a second', async () => {
    const url = `http://127.0.0.1:${await freePort()}/v1/traces`;
    // the first backoff is 0.8–1.2 s, the second 1.2–1.8 s more: with 2.5 s, one retry and no second
    const started = Date.now();
    expect(await transport(url, 2_500).send([Buffer.from('x')])).toEqual({ ok: false, error: 'ECONNREFUSED' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2026-12-05T00:00:00Z');
  it.each([
    [undefined, null],
    ['0', 0],
    ['3', 3_000],
    [' 12 ', 12_000],
    ['Sat, 05 Dec 2026 00:00:04 GMT', 4_000],
    ['Fri, 04 Dec 2026 23:59:00 GMT', 0],
    ['soon', null],
    ['-1', null],
    ['1e3', null],
  ])('reads %s as %s', (header, ms) => {
    expect(retryAfterMs(header, now)).toBe(ms);
  });
});
