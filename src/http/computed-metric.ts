/**
 * A metric whose samples are worked out at scrape time, all of them or none. prom-client's own Counter and Gauge
 * always print an unlabelled sample (0 when never set), but a metric read from nginx must be absent while nginx is
 * not running, not 0; and a collector that fails must cost its own samples only, never the whole scrape.
 */
import type { Metric, Registry } from 'prom-client';

/** Sample is one line of a metric: its labels (besides the registry's default ones) and value. */
export interface Sample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

/** ComputedMetricOptions name the metric and say how to get its samples. */
export interface ComputedMetricOptions {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge';
  /** the samples now; none, or a rejection, prints only the HELP and TYPE lines */
  readonly collect: () => readonly Sample[] | Promise<readonly Sample[]>;
}

/** registerComputed adds a computed metric to `registry`. */
export function registerComputed(registry: Registry, options: ComputedMetricOptions): void {
  const { name, help, type, collect } = options;
  const metric = {
    name,
    help,
    type,
    async get() {
      let samples: readonly Sample[] = [];
      try {
        samples = await collect();
      } catch {
        // Absent rather than failing /metrics: the other collectors still answer.
      }
      return {
        name,
        help,
        type,
        aggregator: 'sum' as const,
        values: samples.map((s) => ({ labels: { ...s.labels }, value: s.value })),
      };
    },
    reset() {},
  };
  // The registry only calls get() (and reset()); prom-client's types name its own classes.
  registry.registerMetric(metric as unknown as Metric);
}
