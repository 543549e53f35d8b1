/**
 * What `ingress-actors render` says on stderr besides the config: the problems, each Ingress it
 * left to other controllers and why, a --configmap that names nothing, and backends without any
 * EndpointSlice folded into one line (`helm template` output has none, so every path would
 * otherwise print its own 503 warning).
 */
import type { BuildOptions } from '../model/build-types.js';
import { whyNotOurs } from '../model/ingress-class.js';
import type { Problem } from '../model/nginx-model.js';
import { formatProblem } from '../model/problems.js';
import type { IngressClass, Snapshot } from '../model/snapshot.js';

const NO_ENDPOINTS = /^Service (\S+) port (\S+) has no ready endpoints; answering 503$/;
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** renderReport gives the stderr lines of a render: one per ignored Ingress, problem or summary. */
export function renderReport(snapshot: Snapshot, options: BuildOptions, problems: readonly Problem[]): string[] {
  const lines: string[] = [];
  const classes = new Map<string, IngressClass>(snapshot.ingressClasses.map((c) => [c.metadata?.name ?? '', c]));
  for (const ingress of snapshot.ingresses) {
    const why = whyNotOurs(ingress, classes, options);
    if (why !== null)
      lines.push(`${ingress.metadata?.namespace ?? 'default'}/${ingress.metadata?.name ?? ''}: ignored: ${why}`);
  }
  if (options.configMap !== undefined) {
    const [namespace, name] = options.configMap.split('/');
    const found = snapshot.configMaps.some((c) => c.metadata?.namespace === namespace && c.metadata?.name === name);
    if (!found) lines.push(`--configmap ${options.configMap}: no such ConfigMap in the manifests; the defaults apply`);
  }
  const sliced = new Set(
    snapshot.endpointSlices.map(
      (s) => `${s.metadata?.namespace ?? 'default'}/${s.metadata?.labels?.[SERVICE_NAME_LABEL] ?? ''}`,
    ),
  );
  const unsliced = new Map<string, Set<string>>();
  let paths = 0;
  for (const problem of problems) {
    const match = NO_ENDPOINTS.exec(problem.message);
    if (match && !sliced.has(match[1]!)) {
      const ports = unsliced.get(match[1]!) ?? new Set<string>();
      unsliced.set(match[1]!, ports.add(match[2]!));
      paths++;
    } else lines.push(formatProblem(problem));
  }
  if (unsliced.size > 0) {
    const services = [...unsliced].map(([service, ports]) => `${service}:${[...ports].join(',')}`).sort();
    const shown = services.length > 5 ? [...services.slice(0, 5), `and ${services.length - 5} more`] : services;
    lines.push(
      `${paths} backend${paths === 1 ? '' : 's'} of ${services.length} Service${services.length === 1 ? '' : 's'} ` +
        `without EndpointSlices in the manifests (as in helm template output) answer 503: ${shown.join(', ')}`,
    );
  }
  return lines;
}
