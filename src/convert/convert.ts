/**
 * convert: Ingresses (with ingress-nginx annotations) → Gateway API objects of the standard channel. Pure: a
 * Snapshot in, objects and the list of what could not be expressed out. One Gateway per IngressClass in use (an HTTP
 * listener on 80, an HTTPS listener on 443 per TLS host), one HTTPRoute per Ingress and host (and one more on the
 * HTTP listener where ingress-nginx redirects to HTTPS), canary Ingresses folded into the routes they shadow. Every
 * string copied has passed the validator the Ingress model uses for its field.
 *
 * The steps: read-ingress.ts identifies the Ingresses and drafts their rules per host (path-rule.ts, filters.ts),
 * canary.ts folds the canaries in, gateway.ts makes each class's Gateway and ReferenceGrants, http-routes.ts its
 * HTTPRoutes.
 */
import { compare } from '../model/backends.js';
import { defaultBuildOptions } from '../model/build-types.js';
import { GATEWAY_GROUP } from '../model/gateway/types.js';
import type { KubeObject, Snapshot } from '../model/snapshot.js';
import { show } from '../model/validate.js';
import { type BackendUse, backendTlsPolicies, type PolicyDemand } from './backend-tls.js';
import { foldCanary } from './canary.js';
import { frontendValidation, hostOwners } from './frontend-tls.js';
import type { Json, Report } from './draft.js';
import { classGateway, gatewayObject, referenceGrants } from './gateway.js';
import { classRoutes } from './http-routes.js';
import { objectName } from './object-name.js';
import { passthroughHosts, passthroughRoute } from './passthrough.js';
import { IngressReader } from './read-ingress.js';
import { isCanaryIngress } from './read-settings.js';
import { readServicesConfigMap, type StreamService, streamListener, streamRoute } from './stream-services.js';

/** ConvertOptions are convert's flags. */
export interface ConvertOptions {
  /** `--gateway-class-name` */
  readonly gatewayClassName: string;
  /** the GatewayClass's spec.controllerName */
  readonly controllerName: string;
  /** print the GatewayClass (`--no-gateway-class` leaves it out) */
  readonly emitGatewayClass: boolean;
  /** `--gateway-name`: the Gateway's name, or its prefix when several IngressClasses are in use */
  readonly gatewayName: string;
  /** `--gateway-namespace`; absent: the namespace all of its Ingresses share, else `default` */
  readonly gatewayNamespace?: string;
  /**
   * `--controller-class`: an Ingress whose IngressClass (when the manifests hold it) names another controller is
   * left out, as ingress-nginx leaves it
   */
  readonly controllerClass: string;
  /** `--tcp-services-configmap` (`namespace/name`): its entries become TCP listeners and TCPRoutes */
  readonly tcpServices?: string;
  /** `--udp-services-configmap` (`namespace/name`): its entries become UDP listeners and UDPRoutes */
  readonly udpServices?: string;
}

/** defaultConvertOptions are convert's defaults. */
export const defaultConvertOptions: ConvertOptions = {
  gatewayClassName: 'ingress-actors',
  controllerName: 'ingress-actors.io/gateway-controller',
  emitGatewayClass: true,
  gatewayName: 'ingress-actors',
  controllerClass: defaultBuildOptions.controllerClass,
};

/** Unexpressed is one thing convert could not say in Gateway API terms, or said with a difference. */
export interface Unexpressed {
  /** `namespace/name` of the Ingress */
  readonly ingress: string;
  /** the annotation (`metadata.annotations.…`) or Ingress field */
  readonly field: string;
  readonly reason: string;
}

/** ConvertResult is the objects to apply and what they do not express. */
export interface ConvertResult {
  readonly objects: readonly KubeObject[];
  readonly unexpressed: readonly Unexpressed[];
}

/** unexpressedLine is one stderr line: `namespace/name: field: reason`, as render's problems read. */
export function unexpressedLine(u: Unexpressed): string {
  return `${u.ingress}: ${u.field}: ${u.reason}`;
}

/** streamServices reads the TCP and UDP services ConfigMaps the options name. */
function streamServices(reader: IngressReader, options: ConvertOptions, report: Report): StreamService[] {
  const tcp = options.tcpServices ? readServicesConfigMap('TCP', options.tcpServices, reader, report) : [];
  const udp = options.udpServices ? readServicesConfigMap('UDP', options.udpServices, reader, report) : [];
  return [...tcp, ...udp];
}

/**
 * convertIngresses turns the snapshot's Ingresses into a GatewayClass, a Gateway per IngressClass in use, HTTPRoutes
 * and ReferenceGrants, and lists what they cannot express.
 */
export function convertIngresses(snapshot: Snapshot, options: ConvertOptions = defaultConvertOptions): ConvertResult {
  const unexpressed: Unexpressed[] = [];
  const report: Report = (ingress, field, reason) => unexpressed.push({ ingress, field, reason });
  const reader = new IngressReader(snapshot, report);
  const controllers = new Map(snapshot.ingressClasses.map((k) => [k.metadata?.name, k.spec?.controller]));
  const idents = reader.identify((className, owner) => {
    const controller = controllers.get(className);
    if (controller === undefined || controller === options.controllerClass) return true;
    report(
      owner,
      'spec.ingressClassName',
      `IngressClass ${show(className)} is another controller's (${show(controller)}, not ` +
        `${show(options.controllerClass)}); Ingress left out`,
    );
    return false;
  });
  const mains = idents.filter((id) => !isCanaryIngress(id.ingress));
  const drafts = mains.flatMap((id) => reader.drafts(id));
  for (const id of idents.filter((i) => isCanaryIngress(i.ingress))) foldCanary(reader, id, drafts);

  // TLS to the backends: one policy per Service port, the oldest Ingress's ask first. A canary's backend, folded in
  // above, is served with its main Ingress's settings (as ingress-nginx serves it): the main's demand covers it too.
  const demands: PolicyDemand[] = [];
  const uses: BackendUse[] = [];
  for (const d of drafts)
    for (const r of d.rules)
      for (const backend of [...r.backends, ...r.extra.flatMap((x) => x.backends)]) {
        const use = { owner: d.ingress.owner, namespace: d.ingress.namespace, backend };
        uses.push(use);
        if (d.ingress.settings.backendTls) demands.push({ ...use, ask: d.ingress.settings.backendTls });
      }

  const classes = [...new Set(mains.map((m) => m.className))].sort();
  const objects: KubeObject[] = [];
  const grants: KubeObject[] = [];
  const routes: KubeObject[] = [];
  const gateways: KubeObject[] = [];
  /** the ConfigMaps of the Gateways' client CAs */
  const extras: KubeObject[] = [];
  for (const className of classes) {
    const members = mains.filter((m) => m.className === className);
    const classDrafts = drafts.filter((d) => d.ingress.className === className);
    const namespaces = [...new Set(members.map((m) => m.namespace))].sort();
    const gwNamespace = options.gatewayNamespace ?? (namespaces.length === 1 ? namespaces[0]! : 'default');
    const gwName =
      classes.length === 1 ? options.gatewayName : objectName(options.gatewayName, className || 'no-class');
    const passthrough = passthroughHosts(members, reader, report);
    const gw = classGateway(gwName, gwNamespace, members, new Set(passthrough.keys()), report);
    routes.push(...classRoutes(gw, classDrafts, drafts, report));
    for (const p of passthrough.values()) {
      const several = [...passthrough.values()].filter((x) => x.owner === p.owner).length > 1;
      routes.push(passthroughRoute(gw, gw.passthroughSections.get(p.host)!, p, several));
    }
    const routeNamespaces = [...new Set(classDrafts.map((d) => d.ingress.namespace))].sort();
    const gateway = gatewayObject(gw, options.gatewayClassName, routeNamespaces);
    // client certificates: each HTTPS host's owner decides what its handshake asks, for the whole port
    const owners = hostOwners(members);
    const hostAsks = [...gw.sections.keys()].map((host) => {
      const owner = owners.get(host);
      return { host, owner: owner?.owner ?? '', ask: owner?.settings.clientCa ?? null };
    });
    for (const m of members.filter((x) => x.settings.clientCa))
      if (!hostAsks.some((h) => h.owner === m.owner))
        report(
          m.owner,
          'metadata.annotations.nginx.ingress.kubernetes.io/auth-tls-secret',
          'none of its hosts is an HTTPS host it owns (spec.tls, the oldest Ingress naming the host); left out',
        );
    const validation = frontendValidation(gw, hostAsks, report);
    if (validation) {
      (gateway as unknown as { spec: Json }).spec.tls = { frontend: validation.frontend };
      extras.push(validation.configMap);
    }
    gateways.push(gateway);
    grants.push(...referenceGrants(gw));
  }

  const streams = streamServices(reader, options, report);
  if (streams.length > 0) {
    // ingress-nginx served these on its own address, whatever the class: the first class's Gateway takes them
    let first = gateways.sort((a, b) => compare(key(a), key(b)))[0];
    if (!first) {
      const gw = classGateway(options.gatewayName, options.gatewayNamespace ?? 'default', [], new Set(), report);
      gateways.push((first = gatewayObject(gw, options.gatewayClassName, [])));
    }
    const target = { name: first.metadata!.name!, namespace: first.metadata!.namespace! };
    const listeners = (first as unknown as { spec: { listeners: Json[] } }).spec.listeners;
    for (const s of streams) {
      listeners.push(streamListener(s, target.namespace));
      routes.push(streamRoute(s, target));
    }
  }

  const policies = backendTlsPolicies(demands, uses, (ns, name) => reader.service(ns, name), report);

  if (options.emitGatewayClass && (classes.length > 0 || streams.length > 0))
    objects.push({
      apiVersion: `${GATEWAY_GROUP}/v1`,
      kind: 'GatewayClass',
      metadata: { name: options.gatewayClassName },
      spec: { controllerName: options.controllerName },
    } as KubeObject);
  const key = (o: KubeObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
  const sort = (list: KubeObject[]) => list.sort((a, b) => compare(key(a), key(b)));
  const byKind = (list: KubeObject[]) =>
    list.sort((a, b) => compare(a.kind ?? '', b.kind ?? '') || compare(key(a), key(b)));
  objects.push(...sort(gateways), ...sort(grants), ...byKind(routes), ...sort(extras), ...policies);
  return { objects, unexpressed };
}
