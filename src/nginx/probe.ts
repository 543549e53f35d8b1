import { connect } from 'node:net';

/** isListening says whether a TCP connect to host:port succeeds now (the seed's probe of 127.0.0.1:80). */
export function isListening(port: number, host = '127.0.0.1', timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host, timeout: timeoutMs });
    const done = (open: boolean) => (socket.destroy(), resolve(open));
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/** waitForPort resolves once something accepts connections on host:port, or rejects after timeoutMs. */
export async function waitForPort(port: number, timeoutMs = 10_000, host = '127.0.0.1'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await isListening(port, host))) {
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
