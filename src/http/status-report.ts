/**
 * The status page's data (`GET /status.json` on `--healthz-port`, and what `/` shows): one StatusReport built by
 * a pure function from the actors' snapshots at request time. The actors own their state; this only reads it:
 * the template actor keeps the model of the last sync, the status actor its problems and the leader Lease, the
 * nginx actor its counters, tables and recent applies, every actor its state value.
 *
 * The shape is a contract for scripts: fields are added, never renamed or removed, while `schema` stays 1.
 */
import type { Certificate, NginxModel, Problem, Server } from '../model/nginx-model.js';
import { certificateFacts } from '../model/certificate-info.js';
import { formatProblem } from '../model/problems.js';
import { renderedHosts } from '../model/served-from.js';
import type { ApplyRecord } from '../../machines/applies.js';
import { selectNginxActivity, selectPushedCertificates } from '../../machines/selectors/nginxProcess.js';
import { selectActorState, type ActorState } from '../../machines/selectors/state.js';
import { selectGatewayStatus, selectProblems, selectRole } from '../../machines/selectors/status.js';
import { selectSyncProgress, type SyncProgress } from '../../machines/selectors/syncQueue.js';
import { selectLastModel } from '../../machines/selectors/template.js';
import type { Health } from './health.js';
import type { ObservedActors } from './observed.js';
import { gatewayRoutesOf, type GatewayRouteReport } from './status-gateway.js';

export type { GatewayParentReport, GatewayRouteReport } from './status-gateway.js';

/** StatusReport is the whole of `/status.json`. */
export interface StatusReport {
  /** 1 for this shape; a change that removes or renames a field makes it 2 */
  readonly schema: 1;
  /** when the report was made, ISO 8601 */
  readonly generatedAt: string;
  readonly controller: ControllerReport;
  /** every host and path served, by host then path; null before the first sync built a model */
  readonly routes: readonly RouteReport[] | null;
  /** the Gateway API's HTTPRoutes and GRPCRoutes, their hostnames and parents' status; null before the first sync */
  readonly gatewayRoutes: readonly GatewayRouteReport[] | null;
  /** the TCP and UDP services and the ssl-passthrough hosts (nginx's stream block); null before the first sync */
  readonly streams: readonly StreamReport[] | null;
  /** the certificate of every TLS host, and the default one; null before the first sync */
  readonly certificates: readonly CertificateReport[] | null;
  /** what the last sync found wrong (a value ignored, paths denied, an object left out), each naming its object and field; null before the first sync */
  readonly problems: readonly ProblemReport[] | null;
  readonly nginx: NginxReport;
  readonly sync: SyncReport;
  /** every actor under the root supervisor, in start order, `root` first */
  readonly actors: readonly ActorReport[];
}

/** ControllerReport says which controller this is and how it is. */
export interface ControllerReport {
  readonly version: string;
  readonly ingressClass: string;
  readonly controllerClass: string;
  /** this replica's identity in the leader Lease */
  readonly identity: string;
  readonly startedAt: string;
  readonly uptimeSeconds: number;
  /** from the status actor's state; `unknown` while it does not run */
  readonly role: 'leader' | 'follower' | 'unknown';
  /** /healthz's verdict, with the details /healthz gives loopback clients */
  readonly healthy: boolean;
  readonly healthProblems: readonly string[];
  readonly healthWarnings: readonly string[];
}

/** RouteReport is one host and path, and where it goes. */
export interface RouteReport {
  /** the Ingress host; `*` for rules without a host (the default server) */
  readonly host: string;
  readonly path: string;
  readonly pathType: string;
  /** `namespace/name` of the Ingress */
  readonly ingress: string | null;
  /** `namespace/service:port`, null when nginx answers itself (a missing Service, a redirect) */
  readonly backend: string | null;
  /** ready endpoints of the backend; null without a backend */
  readonly endpoints: number | null;
  /** a canary Ingress's backend sharing this route, and its endpoints */
  readonly canary: { readonly backend: string; readonly endpoints: number } | null;
  /** what nginx does here: `proxy`, `redirect`, or the status it answers itself (`503`, `404`) */
  readonly answer: string;
  /** the host has a certificate of its own */
  readonly tls: boolean;
  /**
   * where nginx serves the host from: `shared server` (routes as data: the Lua router, from the pushed table) or
   * `own server` (a server block in nginx.conf), with why when routes as data is on
   */
  readonly servedFrom: string;
}

/** StreamReport is one port of nginx's stream block: a TCP or UDP service, or an ssl-passthrough host. */
export interface StreamReport {
  readonly protocol: 'TCP' | 'UDP' | 'TLS passthrough';
  /** the port nginx listens on (`address:port` when it listens on one address); the HTTPS port for passthrough */
  readonly listen: string;
  /** `namespace/configmap key` of a TCP or UDP service (`ingress/tcp-services 9000`); the host for passthrough */
  readonly source: string;
  /** `namespace/name` of the Service */
  readonly service: string | null;
  readonly endpoints: number | null;
}

/** CertificateReport is one TLS host's certificate. */
export interface CertificateReport {
  /** the Ingress host; `*` for the default certificate */
  readonly host: string;
  /** `namespace/name` of the Secret; null for the controller's self-signed default */
  readonly secret: string | null;
  /** the leaf's notAfter, ISO 8601; null when it is not known (self-signed at start, or unreadable) */
  readonly notAfter: string | null;
  /** whole days until notAfter, negative once expired; null when it is not known */
  readonly daysLeft: number | null;
}

/** ProblemReport is one Problem of the model, and its one-line spelling (the CLI's, the logs', the Events'). */
export interface ProblemReport extends Problem {
  readonly text: string;
}

/** ApplyRecord is one reload or push, as the nginx actor keeps the last of them (its `recent`). */
export type { ApplyRecord };

/** NginxReport is the nginx actor's counters and its last applies. */
export interface NginxReport {
  readonly state: string;
  readonly pid: number | null;
  readonly restarts: number;
  readonly reloadsOk: number;
  readonly reloadsFailed: number;
  readonly reloadsSkipped: number;
  readonly pushesOk: number;
  readonly pushesFailed: number;
  readonly lastReloadError: string | null;
  readonly lastPushError: string | null;
  /** the last applies the nginx actor remembers, newest first (empty when it keeps none) */
  readonly recent: readonly ApplyRecord[];
}

/** SyncReport is the sync queue's counters, as its selector reads them. */
export type SyncReport = SyncProgress;

/** ActorReport is one actor: its state value (flattened, as /metrics names it) or its status. */
export interface ActorReport {
  /** the systemId: `root`, `nginx`, `watcher.Ingress`, … */
  readonly id: string;
  /** the state, `stopped`/`error`/`done` for an actor no longer active, `absent` when it does not run */
  readonly state: string;
  readonly status: string;
}

/** ControllerInfo is what the report says about the controller that no actor holds. */
export interface ControllerInfo {
  readonly version: string;
  readonly ingressClass: string;
  readonly controllerClass: string;
  readonly identity: string;
  /** ms since the epoch */
  readonly startedAt: number;
}

/** StatusInput is everything buildStatusReport reads. */
export interface StatusInput {
  readonly actors: ObservedActors;
  /** the actors to list after `root`, in start order (childIds) */
  readonly actorIds: readonly string[];
  readonly info: ControllerInfo;
  readonly health: Health;
  /** ms since the epoch */
  readonly now: number;
}

const DAY_MS = 86_400_000;

/** buildStatusReport makes the report from the actors' snapshots; it reads, never changes, what it is given. */
export function buildStatusReport(input: StatusInput): StatusReport {
  const { actors, info, now } = input;
  const nginx = actors.nginx();
  const status = actors.status();
  const model = selectLastModel(actors.template());
  const problems = selectProblems(status);
  return {
    schema: 1,
    generatedAt: new Date(now).toISOString(),
    controller: {
      version: info.version,
      ingressClass: info.ingressClass,
      controllerClass: info.controllerClass,
      identity: info.identity,
      startedAt: new Date(info.startedAt).toISOString(),
      uptimeSeconds: Math.max(0, Math.floor((now - info.startedAt) / 1000)),
      role: selectRole(status),
      healthy: input.health.ok,
      healthProblems: input.health.problems.map((p) => p.detailed),
      healthWarnings: input.health.warnings.map((w) => w.detailed),
    },
    routes: model ? routesOf(model) : null,
    gatewayRoutes: model ? gatewayRoutesOf(selectGatewayStatus(status), model) : null,
    streams: model ? streamsOf(model) : null,
    certificates: model ? certificatesOf(model, selectPushedCertificates(nginx), now) : null,
    problems: problems ? problems.map((p) => ({ ...pick(p), text: formatProblem(p) })) : null,
    nginx: selectNginxActivity(nginx),
    sync: selectSyncProgress(actors.syncQueue()),
    actors: ['root', ...input.actorIds].map((id) => actorOf(id, actors.actor(id))),
  };
}

const pick = (p: Problem): Problem => ({
  kind: p.kind,
  namespace: p.namespace,
  name: p.name,
  field: p.field,
  message: p.message,
});

/** actorOf names an actor's state as /metrics' ingress_actors_actor_state does: its state while active, else its status. */
function actorOf(id: string, actor: ActorState | undefined): ActorReport {
  if (!actor) return { id, state: 'absent', status: 'absent' };
  return { id, state: selectActorState(actor), status: actor.status };
}

/** routesOf lists each Ingress path once (a Prefix path is two nginx locations), by host then path. */
function routesOf(model: NginxModel): RouteReport[] {
  const upstreams = new Map(model.upstreams.map((u) => [u.name, u]));
  const backendOf = (name: string | null) => {
    const u = name === null ? undefined : upstreams.get(name);
    return u ? { backend: `${u.service}:${u.servicePort}`, endpoints: u.endpoints.length } : null;
  };
  const routes = new Map<string, RouteReport>();
  const served = model.lua?.routesAsData ? renderedHosts(model) : null;
  for (const server of [model.defaultServer, ...model.servers]) {
    const tls = hasOwnCertificate(server);
    const where = served?.get(server.host);
    const servedFrom =
      where === undefined ? 'own server' : where === 'shared' ? 'shared server' : `own server: ${where}`;
    for (const location of server.locations) {
      if (location.ingress === null) continue; // the controller's own (404s, default backend)
      const host = server.isDefault ? '*' : server.host;
      const key = `${host}\u0000${location.path}\u0000${location.pathType}\u0000${location.ingress}`;
      if (routes.has(key)) continue;
      const main = backendOf(location.upstream);
      const canary = location.pass?.canary ? backendOf(location.pass.canary) : null;
      routes.set(key, {
        host,
        path: location.path,
        pathType: location.pathType,
        ingress: location.ingress,
        backend: main?.backend ?? null,
        endpoints: main?.endpoints ?? null,
        canary,
        answer: answerOf(location),
        tls,
        servedFrom,
      });
    }
  }
  return [...routes.values()].sort((a, b) =>
    a.host === b.host ? (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) : a.host < b.host ? -1 : 1,
  );
}

/** streamsOf lists the stream block's ports: TCP and UDP services in the ConfigMaps' order, then passthrough hosts. */
function streamsOf(model: NginxModel): StreamReport[] {
  const stream = model.stream;
  if (!stream) return [];
  const upstreams = new Map(stream.upstreams.map((u) => [u.name, u]));
  // stream.ts matches a wildcard host by `~*` and its server's `~` regex: that regex names the host again.
  const hosts = new Map(model.servers.map((server) => [`~*${server.serverName.slice(1)}`, server.host]));
  const behind = (name: string) => {
    const u = upstreams.get(name);
    return { service: u?.service ?? null, endpoints: u ? u.endpoints.length : null };
  };
  return [
    ...stream.services.map((s) => ({
      protocol: s.udp ? ('UDP' as const) : ('TCP' as const),
      listen: s.listen,
      source: s.source,
      ...behind(s.upstream),
    })),
    ...(stream.passthrough?.hosts ?? []).map((h) => ({
      protocol: 'TLS passthrough' as const,
      listen: stream.passthrough!.listen,
      // A wildcard host is matched by its server's one-label regex: shown as the host it came from.
      source: hosts.get(h.match) ?? h.match,
      ...behind(h.upstream),
    })),
  ];
}

function answerOf(location: NginxModel['servers'][number]['locations'][number]): string {
  if (location.denied) return '503';
  if (location.redirect || location.appRoot) return 'redirect';
  if (location.status !== null) return String(location.status);
  return location.pass ? 'proxy' : 'redirect';
}

const hasOwnCertificate = (server: Server) =>
  !server.isDefault && server.certificateFile !== null && !server.inheritsCertificate;

/**
 * certificatesOf finds each TLS host's certificate: in the model's files when they are rendered into nginx.conf,
 * else in the table pushed to the Lua balancer (`pushed`: PEM by host, from the nginx actor).
 */
function certificatesOf(model: NginxModel, pushed: ReadonlyMap<string, string>, now: number): CertificateReport[] {
  const files = new Map(model.certificates.map((c) => [c.file, c]));
  const reports: CertificateReport[] = [];
  const defaultFile = files.get(model.defaultCertificateFile);
  reports.push(expiryOf('*', defaultFile && defaultFile.id !== 'default' ? defaultFile.id : null, defaultFile, now));
  for (const server of model.servers) {
    if (!hasOwnCertificate(server)) continue;
    const file = files.get(server.certificateFile!);
    const pem = file?.pem ?? pushed.get(server.host) ?? null;
    reports.push(expiryOf(server.host, file?.id ?? secretOfFile(server.certificateFile!), { pem }, now));
  }
  return reports;
}

/** secretOfFile reads `namespace/name` back from `certificates/<namespace>_<name>.pem` (neither part holds `_`). */
function secretOfFile(file: string): string | null {
  const match = /^certificates\/([a-z0-9-]+)_([a-z0-9.-]+)\.pem$/.exec(file);
  return match ? `${match[1]}/${match[2]}` : null;
}

function expiryOf(
  host: string,
  secret: string | null,
  file: Pick<Certificate, 'pem'> | undefined,
  now: number,
): CertificateReport {
  const notAfter = file?.pem ? notAfterOf(file.pem) : null;
  return {
    host,
    secret,
    notAfter: notAfter === null ? null : new Date(notAfter).toISOString(),
    daysLeft: notAfter === null ? null : Math.floor((notAfter - now) / DAY_MS),
  };
}

// Parsed once per PEM text: the same Secret comes back on every poll. Bounded, so renewals do not pile up.
const parsed = new Map<string, number | null>();

/** notAfterOf reads the first certificate of a PEM (chain, then key) and gives its notAfter in ms, or null. */
export function notAfterOf(pem: string): number | null {
  const known = parsed.get(pem);
  if (known !== undefined) return known;
  // the model checked it; an unreadable one is shown as unknown
  const facts = certificateFacts(pem);
  const value = facts === null ? null : facts.expireTime * 1000;
  if (parsed.size >= 1000) parsed.clear();
  parsed.set(pem, value);
  return value;
}
