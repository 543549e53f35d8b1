/**
 * ingress-nginx's request-metric flags (its pkg/flags/flags.go): `--enable-metrics`, `--metrics-per-host`,
 * `--metrics-per-undefined-host`, `--report-status-classes`, `--time-buckets`, `--length-buckets`, `--size-buckets`
 * and `--exclude-socket-metrics`, read into MetricsFlags.
 */
import type { MetricsFlags } from '../config.js';
import { UsageError } from '../usage-error.js';

/** DEFAULT_BUCKETS are ingress-nginx's: prometheus.DefBuckets, LinearBuckets(10, 10, 10), ExponentialBuckets(10, 10, 7). */
export const DEFAULT_BUCKETS: MetricsFlags['buckets'] = {
  time: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  length: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
  size: [10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000],
};

/** METRICS_FLAGS are the flags read here, each a Go-style string (bools are `--flag` or `--flag=false`). */
export const METRICS_FLAGS = [
  'enable-metrics',
  'metrics-per-host',
  'metrics-per-undefined-host',
  'report-status-classes',
  'time-buckets',
  'length-buckets',
  'size-buckets',
  'exclude-socket-metrics',
] as const;

/** METRICS_BOOLEAN_FLAGS may stand alone on the command line. */
export const METRICS_BOOLEAN_FLAGS = METRICS_FLAGS.slice(0, 4);

/** A bucket list longer than this is a mistake, and each bucket is a series per label set. */
const MAX_BUCKETS = 64;

function bool(flag: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new UsageError(`--${flag} must be true or false, not ${JSON.stringify(value)}`);
}

/** buckets reads Go's Float64Slice (`0.1,0.5,1`): finite numbers, strictly increasing, as Prometheus requires. */
function buckets(flag: string, value: string | undefined, fallback: readonly number[]): readonly number[] {
  if (value === undefined) return fallback;
  const parts = value.length <= 2048 ? value.split(',').map((p) => p.trim()) : [];
  const numbers = parts.map((p) => (/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(p) ? Number(p) : Number.NaN));
  const ok =
    numbers.length > 0 &&
    numbers.length <= MAX_BUCKETS &&
    numbers.every((n, i) => Number.isFinite(n) && (i === 0 || n > numbers[i - 1]!));
  if (!ok)
    throw new UsageError(
      `--${flag} must be up to ${MAX_BUCKETS} increasing numbers separated by commas, not ${JSON.stringify(value)}`,
    );
  return numbers;
}

/** parseMetricsFlags reads the flags' values (absent: ingress-nginx's defaults, but request metrics on). */
export function parseMetricsFlags(values: Readonly<Record<string, unknown>>): MetricsFlags {
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  const perHost = bool('metrics-per-host', text('metrics-per-host'), true);
  const perUndefinedHost = bool('metrics-per-undefined-host', text('metrics-per-undefined-host'), false);
  if (perUndefinedHost && !perHost)
    throw new UsageError('--metrics-per-undefined-host=true must be passed with --metrics-per-host=true');
  const exclude = (text('exclude-socket-metrics') ?? '')
    .split(',')
    .map((name) => name.trim().replace(/^nginx_ingress_controller_/, ''))
    .filter((name) => name !== '');
  return {
    // ingress-nginx's default is false; here the controller's own metrics are always served, and requests are
    // counted unless told not to (the cost is measured in README's benchmarks).
    enabled: bool('enable-metrics', text('enable-metrics'), true),
    perHost,
    perUndefinedHost,
    statusClasses: bool('report-status-classes', text('report-status-classes'), false),
    buckets: {
      time: buckets('time-buckets', text('time-buckets'), DEFAULT_BUCKETS.time),
      length: buckets('length-buckets', text('length-buckets'), DEFAULT_BUCKETS.length),
      size: buckets('size-buckets', text('size-buckets'), DEFAULT_BUCKETS.size),
    },
    exclude,
  };
}
