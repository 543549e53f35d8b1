/**
 * Metrics whose text /metrics writes a slice at a time rather than as one string: prom-client's Registry.metrics()
 * builds every sample of every family as objects and then one string, which for many series holds the event loop (and
 * /healthz with it) for seconds and takes hundreds of MB. A StreamedMetric is still registered in the Registry (so
 * Registry.metrics() still has it), and ControllerMetrics.text() asks it for its text in slices instead.
 */

/** StreamedMetric is a prom-client metric object that can also give its text in slices. */
export interface StreamedMetric {
  readonly name: string;
  /**
   * stream yields the family's Prometheus text (`# HELP`, `# TYPE`, samples; each slice ends in a newline), with
   * `defaults` (formatted const labels, `k="v",…`, or '') after each sample's own labels. It waits a turn of the event
   * loop between slices.
   */
  stream(defaults: string): AsyncIterable<string>;
}

/** isStreamed says whether a registered metric object is a StreamedMetric. */
export function isStreamed(metric: object): metric is StreamedMetric {
  return typeof (metric as Partial<StreamedMetric>).stream === 'function';
}

/** escapeLabel escapes a label value as the text format wants (backslash, double quote, newline). */
export function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** formatLabels spells labels as `k="v",…` (no braces). */
export function formatLabels(labels: Readonly<Record<string, string>>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
    .join(',');
}

/** SLICE_CHARS is about how much text one slice holds (64 KiB: a few ms of work) before the stream waits a turn. */
export const SLICE_CHARS = 64 * 1024;

/** nextTurn lets the event loop run what waits (a /healthz probe) before the next slice. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
