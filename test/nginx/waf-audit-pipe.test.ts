/**
 * The audit FIFO (src/nginx/waf-audit-pipe.ts) on a real FIFO: a line written as ModSecurity writes it (an O_APPEND
 * open of the path) becomes one record of the controller's logger with the Ingress, the transaction id and the rule
 * ids; a writer closing does not end the reading; a path that is not a FIFO is left alone.
 */
import { closeSync, openSync, writeSync, constants } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_FIFO, openAuditPipe } from '../../src/nginx/waf-audit-pipe.js';
import { waitFor } from '../support/wait.js';

let dir: string;
beforeAll(async () => void (dir = await mkdtemp(join(tmpdir(), 'ia-audit-'))));
afterAll(() => rm(dir, { recursive: true, force: true }));

const line = (id: string) =>
  JSON.stringify({
    transaction: {
      client_ip: '10.0.0.9',
      unique_id: `shop/web/${id}`,
      request: { method: 'GET', uri: '/?q=x' },
      response: { http_code: 403 },
      producer: { secrules_engine: 'Enabled' },
      messages: [{ details: { ruleId: '942100' } }, { details: { ruleId: '949110' } }],
    },
  });

/** write appends `text` to the FIFO as ModSecurity's fopen(path, "a") does, and closes it. */
function write(path: string, text: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND);
  writeSync(fd, text);
  closeSync(fd);
}

describe('openAuditPipe', () => {
  it('logs each audit line as a record (other lines as nginx lines), through writers coming and going', async () => {
    const records: Record<string, unknown>[] = [];
    const log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          records.push(JSON.parse(chunk.toString('utf8')));
          done();
        },
      }),
    );
    const pipe = await openAuditPipe(dir, log);
    try {
      expect(pipe?.path).toBe(join(dir, AUDIT_FIFO));
      expect((await stat(pipe!.path)).isFIFO()).toBe(true);
      write(pipe!.path, `${line('a1')}\n`);
      write(pipe!.path, `${line('a2')}\nnot an audit line\n`);
      await waitFor('three lines read', () => records.length >= 3);
      expect(records.map((r) => [r.msg, (r.waf as { transactionId?: string } | undefined)?.transactionId])).toEqual([
        ['ModSecurity blocked a request', 'a1'],
        ['ModSecurity blocked a request', 'a2'],
        ['not an audit line', undefined],
      ]);
      expect(records[0]).toMatchObject({ level: 40, waf: { ingress: 'shop/web', rules: ['942100', '949110'] } });
      expect(records[2]).toMatchObject({ level: 20 });
    } finally {
      pipe?.close();
    }
  });

  it('leaves a path that is not a FIFO alone', async () => {
    const other = await mkdtemp(join(tmpdir(), 'ia-audit-file-'));
    try {
      await writeFile(join(other, AUDIT_FIFO), 'keep me');
      const records: unknown[] = [];
      const log = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, done) => done(void records.push(c)) }));
      expect(await openAuditPipe(other, log)).toBeNull();
      expect(await readFile(join(other, AUDIT_FIFO), 'utf8')).toBe('keep me');
      expect(records).toHaveLength(1);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});
