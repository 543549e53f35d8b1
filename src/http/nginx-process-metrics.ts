/**
 * nginx's own figures under ingress-nginx's names (its collectors nginx_status.go and process.go):
 * `nginx_ingress_controller_nginx_process_connections{state}`, `_connections_total{state}` and `_requests_total`
 * from stub_status, and the master's and its workers' CPU, memory, processes, start time and I/O from /proc. Read at
 * scrape time; while nginx is not running (or does not answer within a second) these metrics have no samples.
 */
import type { Registry } from 'prom-client';
import { readUsage, UsageTotals, type Usage } from '../nginx/proc-usage.js';
import { readStubStatus, type StubStatus } from '../nginx/stub-status.js';
import { registerComputed, type Sample } from './computed-metric.js';

/** NginxProcessSource says where nginx is: the master's pid (null while none runs) and the stub_status socket. */
export interface NginxProcessSource {
  readonly masterPid: () => number | null;
  /** null when the template serves no stub_status (then only the /proc metrics are there) */
  readonly statusSocket: string | null;
  /** how long a stub_status read may take (1 s) */
  readonly timeoutMs?: number;
}

interface Reading {
  readonly status: StubStatus | null;
  readonly usage: Usage | null;
}

const PREFIX = 'nginx_ingress_controller_nginx_process';

/** registerNginxProcessMetrics adds the nginx metrics to `registry`. */
export function registerNginxProcessMetrics(registry: Registry, source: NginxProcessSource): void {
  const totals = new UsageTotals();
  // One reading per scrape: every metric below asks while the registry gathers them together.
  let reading: Promise<Reading> | null = null;
  const read = (): Promise<Reading> => {
    reading ??= (async () => {
      const pid = source.masterPid();
      if (pid === null) return { status: null, usage: totals.add([]) };
      const status = source.statusSocket ? await readStubStatus(source.statusSocket, source.timeoutMs) : null;
      return { status, usage: totals.add(readUsage(pid)) };
    })().finally(() => {
      reading = null;
    });
    return reading;
  };
  const fromStatus = (pick: (s: StubStatus) => readonly Sample[]) => async () => {
    const { status } = await read();
    return status ? pick(status) : [];
  };
  const fromUsage = (pick: (u: Usage) => number) => async () => {
    const { usage } = await read();
    return usage ? [{ value: pick(usage) }] : [];
  };
  const gauge = 'gauge' as const;
  const counter = 'counter' as const;
  registerComputed(registry, {
    name: `${PREFIX}_connections`,
    help: 'current number of client connections with state {active, reading, writing, waiting}',
    type: gauge,
    collect: fromStatus((s) =>
      (['active', 'reading', 'writing', 'waiting'] as const).map((state) => ({ labels: { state }, value: s[state] })),
    ),
  });
  registerComputed(registry, {
    name: `${PREFIX}_connections_total`,
    help: 'total number of connections with state {accepted, handled}',
    type: counter,
    collect: fromStatus((s) =>
      (['accepted', 'handled'] as const).map((state) => ({ labels: { state }, value: s[state] })),
    ),
  });
  registerComputed(registry, {
    name: `${PREFIX}_requests_total`,
    help: 'total number of client requests',
    type: counter,
    collect: fromStatus((s) => [{ value: s.requests }]),
  });
  const usage: [string, string, 'counter' | 'gauge', (u: Usage) => number][] = [
    ['num_procs', 'number of processes', gauge, (u) => u.numProcs],
    ['cpu_seconds_total', 'Cpu usage in seconds', counter, (u) => u.cpuSeconds],
    ['read_bytes_total', 'number of bytes read', counter, (u) => u.readBytes],
    ['write_bytes_total', 'number of bytes written', counter, (u) => u.writeBytes],
    ['resident_memory_bytes', 'number of bytes of memory in use', gauge, (u) => u.residentBytes],
    ['virtual_memory_bytes', 'number of bytes of memory in use', gauge, (u) => u.virtualBytes],
    ['oldest_start_time_seconds', 'start time in seconds since 1970/01/01', gauge, (u) => u.oldestStartTime],
  ];
  for (const [name, help, type, pick] of usage)
    registerComputed(registry, { name: `${PREFIX}_${name}`, help, type, collect: fromUsage(pick) });
}
