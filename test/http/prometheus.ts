/**
 * Reading /metrics in tests the way Prometheus would: fetch, parse with a Prometheus text
 * parser (not a regex), and look samples up by family name and labels.
 */
import parsePrometheusTextFormat, { type ParsedFamily, type ParsedMetric } from 'parse-prometheus-text-format';

/** Scrape is one parsed /metrics answer. */
export interface Scrape {
  readonly families: readonly ParsedFamily[];
  /** family looks a metric family up; throws when absent, so a renamed metric fails loudly */
  family(name: string): ParsedFamily;
  /** value is the sample of `name` whose labels include `labels` (the first one); NaN when there is none */
  value(name: string, labels?: Record<string, string>): number;
}

/** parseScrape parses Prometheus text. */
export function parseScrape(text: string): Scrape {
  const families = parsePrometheusTextFormat(text);
  const family = (name: string) => {
    const found = families.find((f) => f.name === name);
    if (!found) throw new Error(`no metric family ${name} in /metrics`);
    return found;
  };
  const matches = (m: ParsedMetric, labels: Record<string, string>) =>
    Object.entries(labels).every(([k, v]) => m.labels?.[k] === v);
  return {
    families,
    family,
    value: (name, labels = {}) => {
      const sample = family(name).metrics.find((m) => matches(m, labels));
      return sample?.value === undefined ? Number.NaN : Number(sample.value);
    },
  };
}

/** scrape GETs http://127.0.0.1:port/metrics and parses it. */
export async function scrape(port: number): Promise<Scrape> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return parseScrape(await res.text());
}

/** healthz GETs /healthz: its status and body. */
export async function healthz(port: number): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  return { status: res.status, body: await res.text() };
}
