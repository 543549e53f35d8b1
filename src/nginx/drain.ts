import { liveGroupMembers, signalGroup } from './master.js';
import { isListening } from './probe.js';

/** DrainOptions say which group to drain, which port to watch and how long in-flight requests get. */
export interface DrainOptions {
  readonly pgid: number;
  readonly port: number;
  readonly drainTimeoutMs: number;
  readonly pollMs?: number;
  readonly signal?: AbortSignal;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * drainOrphans ends what is left of a dead master's process group. The seed only probes the
 * port until it closes, but after `kill -9` of a master its workers serve on forever; so the
 * orphans are asked to quit gracefully (they close their listeners and finish in-flight
 * requests), given `drainTimeoutMs`, then killed; it returns once the group is gone and the
 * port is free (or, if something else holds the port, once the group is gone).
 */
export async function drainOrphans(options: DrainOptions): Promise<{ killed: boolean }> {
  const poll = options.pollMs ?? 50;
  const deadline = Date.now() + options.drainTimeoutMs;
  signalGroup(options.pgid, 'SIGQUIT');
  let killed = false;
  while (liveGroupMembers(options.pgid).length > 0) {
    if (options.signal?.aborted || Date.now() >= deadline) {
      killed = signalGroup(options.pgid, 'SIGKILL');
      break;
    }
    await sleep(poll);
  }
  // A killed process still holds its sockets for a moment; wait for the kernel to free the port.
  const portDeadline = Date.now() + 2000;
  while ((await isListening(options.port)) && Date.now() < portDeadline) await sleep(poll);
  return { killed };
}
