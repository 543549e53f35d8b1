/**
 * A load generator that treats a closed keep-alive connection the way HTTP clients are meant to
 * (RFC 9112 §9.3.1; Node's http docs, `request.reusedSocket`): a GET that fails on a *reused*
 * connection before any byte of the answer arrived is sent again, once, on a new connection. A
 * failure on a new connection, a second failure, or an answer other than 2xx counts as an error.
 * autocannon never retries, so the two loads together show which failures a real client sees.
 */
import { Agent, request, type IncomingMessage } from 'node:http';

/** RetryingLoadResult is what the loops saw: requests answered, retries taken, errors left, and the latencies' p99. */
export interface RetryingLoadResult {
  readonly requests: number;
  readonly retried: number;
  readonly errors: number;
  readonly errorCodes: ReadonlyMap<string, number>;
  readonly p99Ms: number;
}

class RequestFailed extends Error {
  constructor(
    readonly code: string,
    readonly reused: boolean,
  ) {
    super(code);
  }
}

/**
 * once sends one GET, reads the whole answer and resolves to its status; it rejects with RequestFailed, saying whether
 * the socket was reused.
 */
function once(agent: Agent | false, port: number, host: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: '127.0.0.1', port, path, headers: { host } }, (res: IncomingMessage) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', (e: NodeJS.ErrnoException) => reject(new RequestFailed(e.code ?? e.message, false)));
    });
    // Node names a close before any answer "socket hang up" with code ECONNRESET; a reset proper has the same code.
    const code = (e: NodeJS.ErrnoException) => (e.message === 'socket hang up' ? 'hang-up' : (e.code ?? e.message));
    req.on('error', (e: NodeJS.ErrnoException) => reject(new RequestFailed(code(e), req.reusedSocket)));
    req.end();
  });
}

/** retryingLoad runs `connections` request loops for `seconds` through keep-alive connections to 127.0.0.1:`port`. */
export async function retryingLoad(
  port: number,
  host: string,
  connections: number,
  seconds: number,
): Promise<RetryingLoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const deadline = performance.now() + seconds * 1000;
  const latencies: number[] = [];
  const errorCodes = new Map<string, number>();
  let [retried, errors] = [0, 0];
  const fail = (code: string) => {
    errors++;
    errorCodes.set(code, (errorCodes.get(code) ?? 0) + 1);
  };
  const loop = async () => {
    while (performance.now() < deadline) {
      const started = performance.now();
      try {
        let status: number;
        try {
          status = await once(agent, port, host, '/');
        } catch (e) {
          // Only a reused connection may have been closed under the request: retry that once.
          if (!(e instanceof RequestFailed) || !e.reused) throw e;
          retried++;
          // On a new connection: the pool's other idle connections may be closing too.
          status = await once(false, port, host, '/');
        }
        if (status < 200 || status > 299) fail(`status ${status}`);
        else latencies.push(performance.now() - started);
      } catch (e) {
        fail(e instanceof RequestFailed ? `${e.code}_on_${e.reused ? 'reused' : 'new'}_connection` : String(e));
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const p99Ms = latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]! : 0;
  return { requests: latencies.length + errors, retried, errors, errorCodes, p99Ms };
}
