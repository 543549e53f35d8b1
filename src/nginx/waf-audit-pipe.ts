/** The FIFO ModSecurity's audit log goes to under the controller (src/nginx/waf-audit.ts reads its lines). */
import { constants, openSync } from 'node:fs';
import { lstat, unlink } from 'node:fs/promises';
import { Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { execa } from 'execa';
import type { Logger } from '../log.js';
import { logLine } from './master.js';

/** AUDIT_FIFO is the audit log's FIFO, in the private config folder. */
export const AUDIT_FIFO = 'modsecurity-audit.fifo';

/** AuditPipe is the FIFO ModSecurity writes its audit log to, read line by line into the controller's log. */
export interface AuditPipe {
  readonly path: string;
  close(): void;
}

/**
 * openAuditPipe makes the FIFO in `configDir` (a stale FIFO of a former run is replaced; anything else there is left
 * alone, null: the caller sends the audit log to /dev/null) and reads it for as long as the controller runs. nginx's stderr
 * is a socket under the controller, which ModSecurity's `SecAuditLog /dev/stderr` cannot open; a FIFO holds nothing
 * on disk, however much is written. The controller opens it for reading and writing, so it is never without a writer
 * (no end of file between nginx's starts) and nginx's open never waits for a reader.
 */
export async function openAuditPipe(configDir: string, log: Logger): Promise<AuditPipe | null> {
  const path = join(resolve(configDir), AUDIT_FIFO);
  try {
    const found = await lstat(path).catch(() => null);
    if (found?.isFIFO()) await unlink(path);
    else if (found) throw new Error(`${path} exists and is not a FIFO`);
    await execa('mkfifo', ['-m', '0600', path]);
    const fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    const socket = new Socket({ fd, readable: true, writable: false });
    // the FIFO alone never keeps the controller running: a start that fails after this (a --healthz-port in use) exits
    socket.unref();
    const lines = createInterface({ input: socket, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on('line', (line) => logLine(log, line));
    socket.on('error', (error) => log.warn({ err: error }, 'the ModSecurity audit FIFO failed; no more audit records'));
    return { path, close: () => socket.destroy() };
  } catch (error) {
    log.warn({ err: error }, 'cannot make the ModSecurity audit FIFO: no audit log (ModSecurity writes to /dev/null)');
    return null;
  }
}
