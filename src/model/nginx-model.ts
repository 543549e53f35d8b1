/**
 * The nginx model: what nginx.conf will say, already decided and validated. The template only
 * formats it. Absent values are `null`, never missing, so the template can run in strict mode.
 */

/** Problem is one thing wrong with one object: it names the object and the field. */
export interface Problem {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly field: string;
  readonly message: string;
}

/** GlobalConfig holds the ConfigMap keys, validated, with ingress-nginx's defaults. */
export interface GlobalConfig {
  readonly workerProcesses: string;
  readonly errorLogLevel: string;
  readonly maxWorkerConnections: number;
  readonly clientHeaderBufferSize: string;
  readonly largeClientHeaderBuffers: { readonly number: number; readonly size: string };
  /** both set or both null: nginx wants the pair */
  readonly http2MaxFieldSize: string | null;
  readonly http2MaxHeaderSize: string | null;
  readonly serverNameHashMaxSize: number;
  readonly serverNameHashBucketSize: number;
  readonly mapHashBucketSize: number;
  readonly proxyBodySize: string;
  readonly proxyConnectTimeout: string;
  readonly proxyReadTimeout: string;
  readonly proxySendTimeout: string;
  readonly keepAlive: string;
  readonly sslProtocols: readonly string[];
  readonly sslRedirect: boolean;
  readonly useForwardedHeaders: boolean;
  readonly logFormatUpstream: string;
  /** null when disable-access-log is set */
  readonly accessLogPath: string | null;
}

export interface Endpoint {
  /** as nginx's `server` wants it: `10.0.0.1:8080` or `[fd00::1]:8080` */
  readonly address: string;
}

/** Upstream is one Service port's ready endpoints. */
export interface Upstream {
  readonly name: string;
  readonly service: string;
  readonly servicePort: string;
  readonly endpoints: readonly Endpoint[];
}

export type PathType = 'Exact' | 'Prefix';

/** Location is one nginx location block. */
export interface Location {
  /** nginx's match modifier: `=` for an exact match, `` for a prefix */
  readonly modifier: '=' | '';
  /** the literal nginx matches; a Prefix `/foo` yields `= /foo` and `/foo/` */
  readonly match: string;
  /** the Ingress path this location serves, as written after normalising */
  readonly path: string;
  readonly pathType: PathType;
  /** the upstream to proxy to, or null when nginx answers itself */
  readonly upstream: string | null;
  /** 503 when the Service or its endpoints are missing (as ingress-nginx), 404 when nothing routes here */
  readonly status: 404 | 503 | null;
  readonly sslRedirect: boolean;
  /** `namespace/name` of the Ingress, for logs and conflicts */
  readonly ingress: string | null;
}

export interface Certificate {
  /** `namespace/name` of the Secret, or `default` for the controller's fallback */
  readonly id: string;
  /** relative to nginx.conf's directory */
  readonly file: string;
  /** PEM: certificate chain then key; null means the caller makes a self-signed one */
  readonly pem: string | null;
}

/** Server is one nginx server block: one host of one or more Ingresses. */
export interface Server {
  /** the Ingress host, `*.example.com` for a wildcard, `_` for the catch-all */
  readonly host: string;
  /** the server_name nginx matches; a wildcard is a one-label regex, as Ingress v1 means it */
  readonly serverName: string;
  readonly isDefault: boolean;
  readonly certificateFile: string | null;
  readonly locations: readonly Location[];
}

/** NginxModel is everything render() needs: sorted, validated, free of raw Kubernetes strings. */
export interface NginxModel {
  readonly httpPort: number;
  readonly httpsPort: number;
  /** where `ssl-redirect` sends plain HTTP: `https://$host$request_uri`, with the port when not 443 */
  readonly httpsRedirect: string;
  readonly config: GlobalConfig;
  readonly defaultServer: Server;
  readonly servers: readonly Server[];
  readonly upstreams: readonly Upstream[];
  readonly certificates: readonly Certificate[];
}

/** BuildResult is buildModel's answer: the model and what was left out of it and why. */
export interface BuildResult {
  readonly model: NginxModel;
  readonly problems: readonly Problem[];
}
