import type { Endpoint, Problem, Upstream } from './nginx-model.js';
import type { EndpointSlice, IngressBackend, Service, ServicePort, Snapshot } from './snapshot.js';
import { checkDnsLabel, checkIp, checkPortName, checkPortNumber, show } from './validate.js';

/** The label that ties an EndpointSlice to its Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** Report records a problem at a field of the object being built. */
export type Report = (field: string, message: string) => void;

/** Resolved is where a backend sends requests: an upstream, or a status nginx answers itself. */
export type Resolved = { readonly upstream: string; readonly status: null } | { readonly upstream: null; readonly status: 503 };

const unavailable: Resolved = { upstream: null, status: 503 };

/**
 * UpstreamTable resolves Ingress backends through Services and EndpointSlices into upstreams,
 * once per Service port however many paths use it.
 */
export class UpstreamTable {
  private readonly services = new Map<string, Service>();
  private readonly slices = new Map<string, EndpointSlice[]>();
  private readonly upstreams = new Map<string, Upstream>();
  private readonly sliceProblems = new Map<string, Problem>();

  constructor(snapshot: Snapshot) {
    for (const service of snapshot.services) {
      this.services.set(`${service.metadata?.namespace}/${service.metadata?.name}`, service);
    }
    for (const slice of snapshot.endpointSlices) {
      const owner = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
      if (!owner) continue;
      const key = `${slice.metadata?.namespace}/${owner}`;
      this.slices.set(key, [...(this.slices.get(key) ?? []), slice]);
    }
  }

  /** resolve turns `backend` (at `field` of an Ingress in `namespace`) into an upstream or a 503. */
  resolve(namespace: string, backend: IngressBackend | undefined, field: string, report: Report): Resolved {
    if (backend?.resource) {
      report(`${field}.resource`, 'resource backends are not supported; answering 503');
      return unavailable;
    }
    const name = checkDnsLabel(backend?.service?.name);
    if (!name.ok) {
      report(`${field}.service.name`, `${name.message}; answering 503`);
      return unavailable;
    }
    const port = backend?.service?.port;
    const wanted =
      port?.number !== undefined ? checkPortNumber(port.number) : port?.name !== undefined ? checkPortName(port.name) : null;
    if (!wanted || !wanted.ok) {
      report(`${field}.service.port`, wanted ? wanted.message : 'needs a number or a name');
      return unavailable;
    }
    const serviceKey = `${namespace}/${name.value}`;
    const service = this.services.get(serviceKey);
    if (!service) {
      report(`${field}.service.name`, `Service ${serviceKey} not found; answering 503`);
      return unavailable;
    }
    if (service.spec?.type === 'ExternalName') {
      report(`${field}.service.name`, `Service ${serviceKey} is of type ExternalName, which is not supported; answering 503`);
      return unavailable;
    }
    const servicePort = (service.spec?.ports ?? []).find((p) =>
      typeof wanted.value === 'number' ? p.port === wanted.value : p.name === wanted.value,
    );
    if (!servicePort) {
      report(`${field}.service.port`, `Service ${serviceKey} has no port ${show(wanted.value)}; answering 503`);
      return unavailable;
    }
    // Named by the Service port's number, so a path by port name and one by number share one upstream.
    const upstreamName = `${namespace}_${name.value}_${servicePort.port}`;
    const known = this.upstreams.get(upstreamName);
    const upstream = known ?? this.buildUpstream(upstreamName, serviceKey, String(servicePort.port), servicePort);
    this.upstreams.set(upstreamName, upstream);
    if (upstream.endpoints.length === 0) {
      report(`${field}.service`, `Service ${serviceKey} port ${wanted.value} has no ready endpoints; answering 503`);
      return unavailable;
    }
    return { upstream: upstreamName, status: null };
  }

  /** problems are the EndpointSlice addresses left out while resolving, once each. */
  problems(): Problem[] {
    return [...this.sliceProblems.entries()].sort(([a], [b]) => compare(a, b)).map(([, problem]) => problem);
  }

  /** used lists the upstreams that have endpoints, sorted by name. */
  used(): Upstream[] {
    return [...this.upstreams.values()].filter((u) => u.endpoints.length > 0).sort((a, b) => compare(a.name, b.name));
  }

  private buildUpstream(name: string, serviceKey: string, portKey: string, servicePort: ServicePort): Upstream {
    const addresses = new Set<string>();
    for (const slice of this.slices.get(serviceKey) ?? []) {
      if (slice.addressType !== undefined && slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') continue;
      // The slice port that carries this Service port has the same name (both empty when unnamed).
      const slicePort = (slice.ports ?? []).find((p) => (p.name ?? '') === (servicePort.name ?? ''));
      const port = checkPortNumber(slicePort?.port);
      if (!port.ok) continue;
      for (const [i, endpoint] of (slice.endpoints ?? []).entries()) {
        // ready unset means unknown, which consumers treat as ready (discovery.k8s.io/v1).
        if (endpoint.conditions?.ready === false) continue;
        for (const [j, raw] of (endpoint.addresses ?? []).entries()) {
          const ip = checkIp(raw);
          if (!ip.ok) {
            const problem: Problem = {
              kind: 'EndpointSlice',
              namespace: slice.metadata?.namespace ?? '',
              name: slice.metadata?.name ?? '',
              field: `endpoints[${i}].addresses[${j}]`,
              message: `${ip.message}; left out`,
            };
            this.sliceProblems.set(`${problem.namespace}/${problem.name}/${problem.field}`, problem);
            continue;
          }
          addresses.add(ip.value.family === 6 ? `[${ip.value.address}]:${port.value}` : `${ip.value.address}:${port.value}`);
        }
      }
    }
    const endpoints: Endpoint[] = [...addresses].sort(compare).map((address) => ({ address }));
    return { name, service: serviceKey, servicePort: portKey, endpoints };
  }
}

/** compare orders strings by code unit, the same on every machine (no locale). */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
