import type { Endpoint, Problem, Upstream } from './nginx-model.js';
import type { Reads } from './lookups.js';
import { sameItems } from './lookups.js';
import type { EndpointSlice, IngressBackend, Service, ServicePort } from './snapshot.js';
import { checkDnsLabel, checkIp, checkPortName, checkPortNumber, show } from './validate.js';

export { SERVICE_NAME_LABEL } from './lookups.js';

/** Report records a problem at a field of the object being built. */
export type Report = (field: string, message: string) => void;

/** Resolved is where a backend sends requests: an upstream, or a status nginx answers itself. */
export type Resolved =
  | { readonly upstream: string; readonly status: null }
  | { readonly upstream: null; readonly status: 503 };

const unavailable: Resolved = { upstream: null, status: 503 };

interface BuiltUpstream {
  readonly service: Service;
  readonly slices: readonly EndpointSlice[];
  readonly upstream: Upstream;
  readonly problems: readonly (readonly [string, Problem])[];
}

/**
 * BuiltUpstreams keeps the upstreams builds made from a Service and its EndpointSlices, so later
 * builds hand out the same objects while those are the same objects: unchanged upstreams stay
 * identical (plans made in different builds share them), and render can reuse their text.
 */
export class BuiltUpstreams {
  private readonly byName = new Map<string, BuiltUpstream>();
  /**
   * keepEmpty: with the Lua balancer, a backend without endpoints still proxies (the balancer answers 503), so that
   * endpoints coming and going never change nginx.conf. Set once per memo, from BuildOptions.dynamic.
   */
  keepEmpty = false;

  reuse(name: string, service: Service, slices: readonly EndpointSlice[]): BuiltUpstream | undefined {
    const found = this.byName.get(name);
    if (!found || found.service !== service || !sameItems(found.slices, slices)) return undefined;
    return found;
  }

  keep(name: string, built: BuiltUpstream): void {
    this.byName.set(name, built);
  }

  get size(): number {
    return this.byName.size;
  }

  /** retain forgets the upstreams whose names `live` no longer holds. */
  retain(live: (name: string) => boolean): void {
    for (const name of this.byName.keys()) if (!live(name)) this.byName.delete(name);
  }
}

/**
 * UpstreamTable resolves Ingress backends through Services and EndpointSlices into upstreams,
 * once per Service port however many paths use it. Each Ingress's plan has its own table, so
 * what it used is known.
 */
export class UpstreamTable {
  private readonly upstreams = new Map<string, Upstream>();
  private readonly sliceProblemsByField = new Map<string, Problem>();
  private usedByName: Map<string, Upstream> | null = null;

  constructor(
    private readonly reads: Reads,
    private readonly built: BuiltUpstreams,
  ) {}

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
      port?.number !== undefined
        ? checkPortNumber(port.number)
        : port?.name !== undefined
          ? checkPortName(port.name)
          : null;
    if (!wanted?.ok) {
      report(`${field}.service.port`, wanted ? wanted.message : 'needs a number or a name');
      return unavailable;
    }
    const serviceKey = `${namespace}/${name.value}`;
    const service = this.reads.service(serviceKey);
    if (!service) {
      report(`${field}.service.name`, `Service ${serviceKey} not found; answering 503`);
      return unavailable;
    }
    if (service.spec?.type === 'ExternalName') {
      report(
        `${field}.service.name`,
        `Service ${serviceKey} is of type ExternalName, which is not supported; answering 503`,
      );
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
    const upstream =
      this.upstreams.get(upstreamName) ?? this.upstreamFor(upstreamName, serviceKey, service, servicePort);
    this.upstreams.set(upstreamName, upstream);
    this.usedByName = null;
    if (upstream.endpoints.length === 0) {
      report(`${field}.service`, `Service ${serviceKey} port ${wanted.value} has no ready endpoints; answering 503`);
      if (!this.built.keepEmpty) return unavailable;
    }
    return { upstream: upstreamName, status: null };
  }

  /** endpointCount is how many endpoints the upstream `name` resolved here has (0 when it was not resolved). */
  endpointCount(name: string): number {
    return this.upstreams.get(name)?.endpoints.length ?? 0;
  }

  /** sliceProblems are the EndpointSlice addresses left out while resolving, by field. */
  get sliceProblems(): ReadonlyMap<string, Problem> {
    return this.sliceProblemsByField;
  }

  /** used are the upstreams resolved that have endpoints, by name. */
  get used(): ReadonlyMap<string, Upstream> {
    if (!this.usedByName) {
      this.usedByName = new Map();
      for (const [name, upstream] of this.upstreams)
        if (upstream.endpoints.length > 0 || this.built.keepEmpty) this.usedByName.set(name, upstream);
    }
    return this.usedByName;
  }

  private upstreamFor(name: string, serviceKey: string, service: Service, servicePort: ServicePort): Upstream {
    const slices = this.reads.slices(serviceKey);
    const built =
      this.built.reuse(name, service, slices) ?? this.buildUpstream(name, serviceKey, service, slices, servicePort);
    for (const [key, problem] of built.problems) this.sliceProblemsByField.set(key, problem);
    return built.upstream;
  }

  private buildUpstream(
    name: string,
    serviceKey: string,
    service: Service,
    slices: readonly EndpointSlice[],
    servicePort: ServicePort,
  ): BuiltUpstream {
    const addresses = new Set<string>();
    // Serving but terminating endpoints carry traffic only when no ready one is left, as kube-proxy does.
    const terminating = new Set<string>();
    const problems: [string, Problem][] = [];
    for (const slice of slices) {
      if (slice.addressType !== undefined && slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') continue;
      // The slice port that carries this Service port has the same name (both empty when unnamed).
      const slicePort = (slice.ports ?? []).find((p) => (p.name ?? '') === (servicePort.name ?? ''));
      const port = checkPortNumber(slicePort?.port);
      if (!port.ok) continue;
      for (const [i, endpoint] of (slice.endpoints ?? []).entries()) {
        // ready unset means unknown, which consumers treat as ready (discovery.k8s.io/v1).
        const ready = endpoint.conditions?.ready !== false;
        if (!ready && endpoint.conditions?.serving !== true) continue;
        const into = ready ? addresses : terminating;
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
            problems.push([`${problem.namespace}/${problem.name}/${problem.field}`, problem]);
            continue;
          }
          into.add(ip.value.family === 6 ? `[${ip.value.address}]:${port.value}` : `${ip.value.address}:${port.value}`);
        }
      }
    }
    const serving = addresses.size > 0 ? addresses : terminating;
    const endpoints: Endpoint[] = [...serving].sort(compare).map((address) => ({ address }));
    const built: BuiltUpstream = {
      service,
      slices,
      upstream: { name, service: serviceKey, servicePort: String(servicePort.port), endpoints },
      problems,
    };
    this.built.keep(name, built);
    return built;
  }
}

/** compare orders strings by code unit, the same on every machine (no locale). */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
