/**
 * The client address behind a proxy, through real nginx: with use-forwarded-headers the
 * allowlist judges the address X-Forwarded-For names, but only when a trusted proxy
 * (proxy-real-ip-cidr) sent it, and a client cannot put itself further left in the list.
 */
import { describe, expect, it } from 'vitest';
import { allowlistedScene } from './annotations-harness.js';

// 127.0.0.1 is the load balancer in front; 127.0.0.2 connects directly.
const scene = allowlistedScene({ 'use-forwarded-headers': 'true', 'proxy-real-ip-cidr': '127.0.0.1' });

/**
 * from asks allow.test/ from `localAddress`, with X-Forwarded-For when given; the status and the headers the backend
 * saw.
 */
async function from(localAddress: string, forwardedFor?: string) {
  const reply = await scene().http('allow.test', '/', {
    localAddress,
    headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {},
  });
  const seen = reply.status === 200 ? (JSON.parse(reply.body) as { headers: Record<string, string> }).headers : {};
  return { status: reply.status, realIp: seen['x-real-ip'], forwardedFor: seen['x-forwarded-for'] };
}

describe('use-forwarded-headers with proxy-real-ip-cidr, through real nginx', () => {
  it('renders without problems', () => expect(scene().problems).toBe(''));

  it('a trusted proxy naming an allowed client gets through; the backend sees the client and the chain', async () => {
    expect(await from('127.0.0.1', '10.9.8.7')).toEqual({
      status: 200,
      realIp: '10.9.8.7',
      forwardedFor: '10.9.8.7, 127.0.0.1',
    });
  });

  it('the proxy itself, naming nobody, is judged by its own address', async () => {
    expect((await from('127.0.0.1')).status).toBe(403);
  });

  it('an untrusted peer cannot name an allowed client', async () => {
    expect((await from('127.0.0.2', '10.9.8.7')).status).toBe(403);
  });

  it('trusted hops are skipped from the right (real_ip_recursive)', async () => {
    expect(await from('127.0.0.1', '10.9.8.7, 127.0.0.1')).toMatchObject({ status: 200, realIp: '10.9.8.7' });
  });

  it('a client that prepends an allowed address is still judged by its own', async () => {
    expect((await from('127.0.0.1', '10.9.8.7, 203.0.113.5')).status).toBe(403);
  });
});
