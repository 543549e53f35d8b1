/**
 * The slice of each Kubernetes object that buildModel reads. The shapes are the API's own
 * (networking.k8s.io/v1, discovery.k8s.io/v1, core/v1), so objects from a YAML file, from the
 * API server's JSON or from @kubernetes/client-node all fit; timestamps may be strings or Dates.
 */

export interface ObjectMeta {
  readonly name?: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
  readonly creationTimestamp?: string | Date;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface KubeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: ObjectMeta;
}

export interface ServiceBackendPort {
  readonly name?: string;
  readonly number?: number;
}

export interface IngressBackend {
  readonly service?: { readonly name?: string; readonly port?: ServiceBackendPort };
  readonly resource?: { readonly apiGroup?: string; readonly kind?: string; readonly name?: string };
}

export interface HTTPIngressPath {
  readonly path?: string;
  readonly pathType?: string;
  readonly backend?: IngressBackend;
}

export interface IngressRule {
  readonly host?: string;
  readonly http?: { readonly paths?: readonly HTTPIngressPath[] };
}

export interface IngressTLS {
  readonly hosts?: readonly string[];
  readonly secretName?: string;
}

export interface Ingress extends KubeObject {
  readonly spec?: {
    readonly ingressClassName?: string;
    readonly defaultBackend?: IngressBackend;
    readonly rules?: readonly IngressRule[];
    readonly tls?: readonly IngressTLS[];
  };
}

export interface IngressClass extends KubeObject {
  readonly spec?: { readonly controller?: string };
}

export interface ServicePort {
  readonly name?: string;
  readonly port?: number;
  readonly targetPort?: number | string;
  readonly protocol?: string;
}

export interface Service extends KubeObject {
  readonly spec?: {
    readonly type?: string;
    readonly ports?: readonly ServicePort[];
    readonly externalName?: string;
    readonly clusterIP?: string;
  };
}

export interface EndpointSlice extends KubeObject {
  readonly addressType?: string;
  readonly ports?: readonly { readonly name?: string; readonly port?: number; readonly protocol?: string }[];
  readonly endpoints?: readonly {
    readonly addresses?: readonly string[];
    readonly conditions?: { readonly ready?: boolean; readonly serving?: boolean; readonly terminating?: boolean };
  }[];
}

export interface Secret extends KubeObject {
  readonly type?: string;
  /** base64, as the API serves it */
  readonly data?: Readonly<Record<string, string>>;
  /** plain text, as a manifest may give it; the API server folds it into data */
  readonly stringData?: Readonly<Record<string, string>>;
}

export interface ConfigMap extends KubeObject {
  readonly data?: Readonly<Record<string, string>>;
}

/** Snapshot is a read-only view of every cache the controller keeps, the only input of buildModel. */
export interface Snapshot {
  readonly ingresses: readonly Ingress[];
  readonly ingressClasses: readonly IngressClass[];
  readonly services: readonly Service[];
  readonly endpointSlices: readonly EndpointSlice[];
  readonly secrets: readonly Secret[];
  readonly configMaps: readonly ConfigMap[];
  /** Gateway API objects (gateway.networking.k8s.io), untrusted: src/model/gateway/read.ts checks them */
  readonly gatewayClasses?: readonly KubeObject[];
  readonly gateways?: readonly KubeObject[];
  readonly httpRoutes?: readonly KubeObject[];
  readonly grpcRoutes?: readonly KubeObject[];
  readonly tlsRoutes?: readonly KubeObject[];
  readonly tcpRoutes?: readonly KubeObject[];
  readonly udpRoutes?: readonly KubeObject[];
  /** ListenerSets (gateway.networking.k8s.io/v1), untrusted: src/model/gateway/listener-sets.ts reads them */
  readonly listenerSets?: readonly KubeObject[];
  readonly referenceGrants?: readonly KubeObject[];
  /** BackendTLSPolicies (gateway.networking.k8s.io/v1), untrusted: src/model/gateway/backend-tls.ts checks them */
  readonly backendTLSPolicies?: readonly KubeObject[];
  /** Namespaces, for a listener's allowedRoutes `from: Selector` */
  readonly namespaces?: readonly KubeObject[];
}

/** emptySnapshot is a Snapshot with nothing in it. */
export const emptySnapshot: Snapshot = Object.freeze({
  ingresses: [],
  ingressClasses: [],
  services: [],
  endpointSlices: [],
  secrets: [],
  configMaps: [],
});

/** objectKey names an object the way kubectl does: `namespace/name`, or `name` when cluster-scoped. */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}
