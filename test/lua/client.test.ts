import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ControlChannel, ControlError, newControlToken } from '../../src/nginx/control.js';

let dir: string;
let silent: Server;
const accepted: Socket[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-control-'));
  // accepts and never answers
  silent = createServer((socket) => void accepted.push(socket));
  await new Promise<void>((done) => silent.listen(join(dir, 'silent.sock'), done));
});

afterAll(async () => {
  for (const socket of accepted) socket.destroy();
  await new Promise((done) => silent.close(done));
  await rm(dir, { recursive: true, force: true });
});

describe('ControlChannel', () => {
  test('newControlToken is 64 random hex characters', () => {
    const [a, b] = [newControlToken(), newControlToken()];
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });

  test('a socket that never answers is a ControlError after the timeout', async () => {
    const channel = new ControlChannel(join(dir, 'silent.sock'), newControlToken(), 150);
    const started = Date.now();
    const err = await channel.status().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlError);
    expect((err as ControlError).status).toBe(0);
    expect((err as ControlError).message).toContain('no answer within 150 ms');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test('no socket at all is a ControlError with status 0', async () => {
    const channel = new ControlChannel(join(dir, 'absent.sock'), newControlToken());
    await expect(channel.pushBackends({ version: 'v', backends: [] })).rejects.toMatchObject({
      name: 'ControlError',
      status: 0,
    });
  });
});
