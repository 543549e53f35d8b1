/**
 * IngressReader reads the Ingresses of one convert run: which it keeps (valid names, its controller's classes), their
 * backends resolved to Service ports, and each main Ingress's rules drafted per host. What it cannot read is reported
 * and left out, as the model leaves it.
 */
import { byAge } from '../model/ingress-age.js';
import { LEGACY_CLASS_ANNOTATION } from '../model/ingress-class.js';
import type { ConfigMap, Ingress, IngressBackend, Secret, Service, Snapshot } from '../model/snapshot.js';
import { checkDnsLabel, checkHost, checkObjectName, checkPortName, checkPortNumber, show } from '../model/validate.js';
import { type Backend, CATCH_ALL, type Draft, type Ident, type Report } from './draft.js';
import { ruleFilters } from './filters.js';
import { pathRule } from './path-rule.js';
import { readSettings } from './read-settings.js';

/** BACKEND_LEFT_OUT ends the report of a backend that could not be converted. */
const BACKEND_LEFT_OUT = 'backend left out (the rule answers 500, where ingress-nginx answered 503)';

/** classOf is the IngressClass an Ingress names, by field or legacy annotation; '' for none. */
function classOf(ingress: Ingress): string {
  const name = ingress.spec?.ingressClassName ?? ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION] ?? '';
  return checkObjectName(name).ok ? name : '';
}

/** IngressReader holds the Services and ConfigMaps of one run's snapshot, and reports through `report`. */
export class IngressReader {
  private readonly services = new Map<string, Service>();
  private readonly configMaps = new Map<string, ConfigMap>();
  private readonly secrets = new Map<string, Secret>();

  constructor(
    private readonly snapshot: Snapshot,
    readonly report: Report,
  ) {
    for (const s of snapshot.services) this.services.set(`${s.metadata?.namespace}/${s.metadata?.name}`, s);
    for (const c of snapshot.configMaps) this.configMaps.set(`${c.metadata?.namespace}/${c.metadata?.name}`, c);
    for (const s of snapshot.secrets) this.secrets.set(`${s.metadata?.namespace}/${s.metadata?.name}`, s);
  }

  /** service is the Service `namespace/name` of the manifests. */
  service(namespace: string, name: string): Service | undefined {
    return this.services.get(`${namespace}/${name}`);
  }

  /** configMap is the ConfigMap `namespace/name` of the manifests. */
  configMap(ref: string): ConfigMap | undefined {
    return this.configMaps.get(ref);
  }

  /**
   * streamPort is the port number a services ConfigMap entry names (a named port looked up in the Service, which then
   * must be in the manifests), checked to be of the protocol where the Service is known; a message when it cannot be.
   */
  streamPort(namespace: string, name: string, port: number | string, protocol: 'TCP' | 'UDP'): number | string {
    const service = this.services.get(`${namespace}/${name}`);
    if (!service)
      return typeof port === 'number'
        ? port
        : `${show(port)}: a backendRef needs a port number, and Service ${namespace}/${name} is not in the manifests`;
    // one number may be there twice, for TCP and for UDP (DNS's 53): the port of this protocol first
    const named = (service.spec?.ports ?? []).filter((p) =>
      typeof port === 'number' ? p.port === port : p.name === port,
    );
    const found = named.find((p) => (p.protocol ?? 'TCP') === protocol) ?? named[0];
    if (found?.port === undefined) return `Service ${namespace}/${name} has no port ${show(port)}`;
    if ((found.protocol ?? 'TCP') !== protocol)
      return `Service ${namespace}/${name} port ${typeof port === 'number' ? port : show(port)} is ${found.protocol ?? 'TCP'}, not ${protocol}`;
    return found.port;
  }

  /** identify reads each Ingress (oldest first) that `ours` keeps: its name, class and settings. */
  identify(ours: (className: string, owner: string) => boolean): Ident[] {
    const idents: Ident[] = [];
    // The controller's own order, so that where the oldest Ingress wins (a TLS host's certificate) both agree.
    const sorted = [...this.snapshot.ingresses].sort((a, b) => byAge(a, b));
    for (const ingress of sorted) {
      const namespace = checkDnsLabel(ingress.metadata?.namespace);
      const name = checkObjectName(ingress.metadata?.name);
      // A name that fails its check is quoted, so that it cannot make a line of its own on stderr.
      const owner =
        namespace.ok && name.ok
          ? `${namespace.value}/${name.value}`
          : `${show(ingress.metadata?.namespace ?? '')}/${show(ingress.metadata?.name ?? '')}`;
      if (!namespace.ok || !name.ok) {
        const bad = namespace.ok ? name : namespace;
        this.report(
          owner,
          namespace.ok ? 'metadata.name' : 'metadata.namespace',
          `${(bad as { message: string }).message}; Ingress left out`,
        );
        continue;
      }
      const className = classOf(ingress);
      if (!ours(className, owner)) continue;
      const settings = readSettings(
        ingress,
        namespace.value,
        (ns, n) => this.configMaps.get(`${ns}/${n}`),
        (ns, n) => this.secrets.get(`${ns}/${n}`),
        (field, reason) => this.report(owner, field, reason),
      );
      idents.push({
        ingress,
        namespace: namespace.value,
        name: name.value,
        owner,
        className,
        settings,
      });
    }
    return idents;
  }

  /**
   * resource says whether a backend names a resource instead of a Service, reporting it: its caller leaves the rule
   * out, as the model does (src/model/ingress-plan.ts).
   */
  resource(id: Ident, backend: IngressBackend | undefined, field: string): boolean {
    if (!backend?.resource) return false;
    this.report(id.owner, `${field}.resource`, 'not a Service: left out, as ingress-nginx leaves it');
    return true;
  }

  /** backend resolves an Ingress backend to a Service name and port number; null (reported) when it cannot. */
  backend(id: Ident, backend: IngressBackend | undefined, field: string): Backend | null {
    const name = checkDnsLabel(backend?.service?.name);
    if (!name.ok) {
      this.report(id.owner, `${field}.service.name`, `${name.message}; ${BACKEND_LEFT_OUT}`);
      return null;
    }
    const port = backend?.service?.port;
    if (port?.number !== undefined) {
      const number = checkPortNumber(port.number);
      if (number.ok) return { name: name.value, port: number.value };
      this.report(id.owner, `${field}.service.port.number`, `${number.message}; ${BACKEND_LEFT_OUT}`);
      return null;
    }
    const portName = checkPortName(port?.name);
    if (!portName.ok) {
      this.report(id.owner, `${field}.service.port`, `${portName.message}; ${BACKEND_LEFT_OUT}`);
      return null;
    }
    const service = this.services.get(`${id.namespace}/${name.value}`);
    const found = service?.spec?.ports?.find((p) => p.name === portName.value)?.port;
    if (found === undefined || !checkPortNumber(found).ok) {
      this.report(
        id.owner,
        `${field}.service.port.name`,
        `${show(portName.value)}: a backendRef needs a port number, and ${
          service
            ? `Service ${id.namespace}/${name.value} has no such port`
            : `Service ${id.namespace}/${name.value} is not in the manifests`
        }; ${BACKEND_LEFT_OUT}`,
      );
      return null;
    }
    return { name: name.value, port: found };
  }

  /** drafts reads a main Ingress into one draft per host. */
  drafts(id: Ident): Draft[] {
    const drafts = new Map<string, Draft>();
    const draftOf = (host: string) => {
      let d = drafts.get(host);
      if (!d) drafts.set(host, (d = { ingress: id, host, rules: [] }));
      return d;
    };
    const spec = id.ingress.spec ?? {};
    for (const [i, rule] of (spec.rules ?? []).entries()) {
      const field = `spec.rules[${i}]`;
      let host = CATCH_ALL;
      if (rule.host) {
        const checked = checkHost(rule.host);
        if (!checked.ok) {
          this.report(id.owner, `${field}.host`, `${checked.message}; rule left out`);
          continue;
        }
        host = checked.value;
        if (host.startsWith('*.') && !drafts.has(host))
          this.report(
            id.owner,
            `${field}.host`,
            `${show(host)}: an Ingress wildcard matches exactly one DNS label; a Gateway API wildcard hostname matches ` +
              'one or more',
          );
      }
      const draft = draftOf(host);
      for (const [j, p] of (rule.http?.paths ?? []).entries()) {
        const pf = `${field}.http.paths[${j}]`;
        if (this.resource(id, p.backend, `${pf}.backend`)) continue;
        const base = pathRule(this.report, id, p.path, p.pathType, pf);
        if (!base) continue;
        const backend = id.settings.redirect ? null : this.backend(id, p.backend, `${pf}.backend`);
        draft.rules.push({ ...base, backends: backend ? [backend] : [] });
        if (id.settings.appRoot !== null && base.key === 'PathPrefix /' && !id.settings.redirect)
          draft.rules.push({
            key: 'Exact /',
            match: { path: { type: 'Exact', value: '/' } },
            filters: [
              {
                type: 'RequestRedirect',
                requestRedirect: {
                  path: { type: 'ReplaceFullPath', replaceFullPath: id.settings.appRoot },
                  statusCode: 302,
                },
              },
            ],
            backends: [],
            timeout: null,
            extra: [],
          });
      }
    }
    // A resource default backend is left out whole, as the model leaves it (no `/` rule that would answer 500).
    if (spec.defaultBackend && !this.resource(id, spec.defaultBackend, 'spec.defaultBackend')) {
      // As ingress-nginx: the `/` of this Ingress's hosts (where no path of its own is `/`), or the catch-all's.
      const hosts = (spec.rules ?? []).length === 0 ? [CATCH_ALL] : [...drafts.keys()];
      const backend = id.settings.redirect ? null : this.backend(id, spec.defaultBackend, 'spec.defaultBackend');
      for (const host of hosts) {
        const draft = draftOf(host);
        if (draft.rules.some((r) => r.key === 'PathPrefix /')) continue;
        draft.rules.push({
          key: 'PathPrefix /',
          match: { path: { type: 'PathPrefix', value: '/' } },
          filters: ruleFilters(id.settings, null),
          backends: backend ? [{ ...backend }] : [],
          timeout: id.settings.redirect ? null : id.settings.timeout,
          extra: [],
        });
      }
    }
    return [...drafts.values()].filter((d) => d.rules.length > 0);
  }
}
