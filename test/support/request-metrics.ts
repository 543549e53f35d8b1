/**
 * Request metrics as the controller builds them, for tests and benches that feed them drained text directly: the
 * flags' defaults, a ControllerMetrics with its RequestMetrics, and every Ingress filled to its series cap.
 */
import type { MetricsFlags } from '../../src/config.js';
import { ControllerMetrics } from '../../src/http/metrics.js';
import { STATUS_CODES } from '../../src/http/request-labels.js';
import { RequestMetrics, type RequestMetricsOptions } from '../../src/http/request-metrics.js';
import { createLogger } from '../../src/log.js';
import type { NginxModel } from '../../src/model/nginx-model.js';

/** METRICS_FLAGS are the request metrics' flags at ingress-nginx's defaults (per host, default buckets). */
export const METRICS_FLAGS: MetricsFlags = {
  enabled: true,
  perHost: true,
  perUndefinedHost: false,
  statusClasses: false,
  buckets: {
    time: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    length: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    size: [10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000],
  },
  exclude: [],
};

/** setUpRequestMetrics builds a ControllerMetrics and the RequestMetrics in its registry (nothing to drain). */
export function setUpRequestMetrics(
  options: Pick<RequestMetricsOptions, 'maxSeries' | 'limits'> & { log?: RequestMetricsOptions['log'] } = {},
): { metrics: ControllerMetrics; requests: RequestMetrics } {
  const { log = createLogger({ level: 'silent' }), ...limits } = options;
  const metrics = new ControllerMetrics({
    controllerNamespace: 'ingress-nginx',
    controllerClass: 'k8s.io/ingress-nginx',
    controllerPod: 'pod-1',
    electionId: 'leader',
    actorIds: [],
  });
  const requests = new RequestMetrics({
    registry: metrics.registry,
    flags: METRICS_FLAGS,
    drain: async () => 'left 0 dropped 0\n',
    log,
    ...limits,
  });
  return { metrics, requests };
}

/** what monitor.lua counts a request under when its method is no standard one */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'OTHER'];
/** one request observed in every histogram (slots as monitor.lua lays them out with the default buckets) */
const DELTAS = '0:1,1:1,13:0.001,14:1,26:0.001,27:1,39:0.001,40:1,52:0.001,53:1,64:5,65:1,76:5,77:1,85:5';

/**
 * fillToCap gives `requests` `ingresses` Ingresses (host app<i>.example.com, namespace tenant-<i>) and one request of
 * every registered status and method for each, as nginx's control channel hands them over: more label sets than an
 * Ingress's cap (500), so each holds as many series as it may, every histogram observed.
 */
export function fillToCap(requests: RequestMetrics, ingresses: number): void {
  const servers = Array.from({ length: ingresses }, (_, i) => ({
    host: `app${i}.example.com`,
    locations: [
      { path: '/', route: { id: `r${i}`, namespace: `tenant-${i}`, ingressName: `app${i}`, serviceName: 'web' } },
    ],
  }));
  requests.setModel({ defaultServer: { host: '_', locations: [] }, servers } as unknown as NginxModel);
  for (let i = 0; i < ingresses; i++) {
    const lines = ['left 0 dropped 0'];
    for (const status of STATUS_CODES)
      for (const method of METHODS) lines.push(`app${i}.example.com r${i} ${status} ${method} 0\t${DELTAS}`);
    requests.add(`${lines.join('\n')}\n`);
  }
}
