/**
 * Long-lived connections held open through a benchmark's changes (issue 29: "with 20 long-lived streaming responses
 * and WebSocket connections open: 0 cut, and no extra nginx worker generation"): open them, then count the cut ones
 * and the ones still flowing; and nginx's live workers, to see whether a change started a worker generation.
 */
import { isLive, processes } from '../src/nginx/proc.js';
import { type LongLived, openStream, openWebSocket } from '../test/support/streams.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Held is what openLongLived opened. */
export interface Held {
  readonly streams: readonly LongLived[];
  readonly websockets: readonly LongLived[];
}

/** openLongLived opens `count` streaming responses and `count` WebSockets through nginx's `port` to `host`. */
export async function openLongLived(port: number, host: string, count: number): Promise<Held> {
  const streams = await Promise.all(Array.from({ length: count }, () => openStream(port, host)));
  const websockets = await Promise.all(Array.from({ length: count }, () => openWebSocket(port, host)));
  return { streams, websockets };
}

/** heldReport counts the cut connections and those that got data in the last second, then closes them all. */
export async function heldReport(held: Held): Promise<{ cut: number; flowing: number; total: number }> {
  const all = [...held.streams, ...held.websockets];
  const seen = all.map((c) => c.chunks);
  await sleep(1000);
  const report = {
    cut: all.filter((c) => c.ended).length,
    flowing: all.filter((c, i) => !c.ended && c.chunks > seen[i]!).length,
    total: all.length,
  };
  for (const c of all) c.close();
  return report;
}

/** liveWorkers are the pids of the nginx master's live workers (not those left draining by a reload), sorted. */
export function liveWorkers(master: number): string {
  return processes()
    .filter((p) => p.ppid === master && isLive(p))
    .map((p) => p.pid)
    .sort((a, b) => a - b)
    .join(',');
}
