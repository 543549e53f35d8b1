/**
 * The tables the controller pushes to nginx's Lua balancer over the control socket, so that an
 * endpoint change or a renewed certificate needs no reload: built here from the model (their shapes are
 * src/model/pushed-tables.ts); the nginx actor pushes them (src/nginx/control.ts); lua/ingress_actors/ reads
 * them. Every string in them passed the model's validators; Lua checks their shape again and treats them as
 * data only.
 */
import { createHash } from 'node:crypto';
import { AFFINITY_KEY_PREFIX } from './annotations/http-extras.js';
import { filesDigest } from './files-digest.js';
import type { BalancedUpstream, Certificate, NginxModel, Server } from './nginx-model.js';
import type {
  BalanceMethod,
  Backend,
  BackendPeer,
  BackendTable,
  CertificateTable,
  DynamicTables,
  RouteServer,
  RouteTable,
  ServedCertificate,
} from './pushed-tables.js';
import { certificateProblem } from './table-check.js';

interface PemPair {
  readonly cert: string;
  readonly key: string;
}

/**
 * servedNames are what a certificate table serves: every host, then every Gateway server as `server <key>` (a host and
 * a server key are two separate namespaces).
 */
export function servedNames(table: CertificateTable): string[] {
  return [
    ...table.certificates.flatMap((c) => c.hosts),
    ...table.certificates.flatMap((c) => c.servers.map((key) => `server ${key}`)),
  ];
}

/** An empty RouteTable, pushed when no Gateway route is served. */
export const EMPTY_ROUTES: RouteTable = Object.freeze({ version: 'empty', servers: [] });

/** routeTableOf gives the servers their version. */
export function routeTableOf(servers: readonly RouteServer[]): RouteTable {
  return servers.length === 0 ? EMPTY_ROUTES : { version: versionOf(servers), servers };
}

/**
 * DynamicSplit is the model as the Lua balancer serves it: nginx.conf names neither endpoints nor host
 * certificates, so those go into the pushed tables and out of the files the nginx actor writes. It keeps
 * the last answer for the same model parts (incremental builds hand them back as the same objects), so
 * an unchanged table is not serialised and hashed again.
 */
export class DynamicSplit {
  private lastUpstreams: readonly BalancedUpstream[] | null = null;
  private lastBackends: BackendTable | null = null;
  private lastServers: readonly Server[] | null = null;
  private lastFiles: readonly Certificate[] | null = null;
  private lastCertificates: { table: CertificateTable; files: readonly Certificate[]; digest: string } | null = null;
  private lastGateway: NginxModel['gateway'] = null;

  /** split gives the tables to push, and the model with only the files nginx.conf still names (and their digest). */
  split(model: NginxModel): { model: NginxModel; tables: DynamicTables } {
    const backends = this.backendsOf(model.upstreams);
    const certificates = this.certificatesOf(model);
    return {
      model: { ...model, certificates: certificates.files, filesDigest: certificates.digest },
      tables: { backends, certificates: certificates.table, routes: model.gateway?.routes ?? EMPTY_ROUTES },
    };
  }

  private backendsOf(upstreams: readonly BalancedUpstream[]): BackendTable {
    if (this.lastBackends && upstreams === this.lastUpstreams) return this.lastBackends;
    const backends: Backend[] = upstreams.map((u) => ({
      name: u.name,
      balance: balanceOf(u),
      hashKey: u.hashKey,
      endpoints: u.endpoints.map((e) => peerOf(e.address)),
    }));
    this.lastUpstreams = upstreams;
    this.lastBackends = { version: versionOf(backends), backends };
    return this.lastBackends;
  }

  private certificatesOf(model: NginxModel): {
    table: CertificateTable;
    files: readonly Certificate[];
    digest: string;
  } {
    const servers = [model.defaultServer, ...model.servers];
    if (
      this.lastCertificates &&
      model.servers === this.lastServers &&
      model.certificates === this.lastFiles &&
      model.gateway === this.lastGateway
    )
      return this.lastCertificates;
    const byFile = new Map(model.certificates.map((c) => [c.file, c]));
    // one entry per certificate file (a Secret's), naming every host and server served with it
    const entries = new Map<string, { secret: string; pem: PemPair; hosts: string[]; servers: string[] }>();
    const entryOf = (file: string | null) => {
      const certificate = file === null ? undefined : byFile.get(file);
      if (!certificate?.pem || file === null) return null;
      let entry = entries.get(file);
      if (!entry) {
        entry = { secret: certificate.id, pem: pemPair(certificate.pem), hosts: [], servers: [] };
        entries.set(file, entry);
      }
      return entry;
    };
    for (const server of servers) {
      if (server.inheritsCertificate || server.certificateFile === null || server.isDefault) continue;
      entryOf(server.certificateFile)?.hosts.push(server.host);
    }
    // Each Gateway HTTPS server with a hostname: by its key (an Ingress TLS host of the same name, or another Gateway's
    // server for it on another address or port, is served by its own).
    for (const server of model.gateway?.servers ?? []) entryOf(server.certificateFile)?.servers.push(server.key);
    const certificates: ServedCertificate[] = [];
    const served = new Set<string>();
    const keys = new Set<string>();
    for (const [file, entry] of entries) {
      // Secrets are one file each; should two files come from one (the default certificate's), both keep a key
      const secret = keys.has(entry.secret) ? `${entry.secret}#${keys.size}` : entry.secret;
      keys.add(secret);
      // never for a Secret the API server stores (at most 1 MiB): nginx would refuse it, so it is not sent
      if (certificateProblem(secret, entry.pem.cert, entry.pem.key) !== null) continue;
      certificates.push({ secret, ...entry.pem, hosts: entry.hosts, servers: entry.servers });
      served.add(file);
    }
    served.delete(model.defaultCertificateFile);
    // a Gateway catch-all names its certificate in nginx.conf, even when another server pushes the same one
    for (const server of model.gateway?.servers ?? [])
      if (server.fileCertificate !== null) served.delete(server.fileCertificate);
    const files = model.certificates.filter((c) => !served.has(c.file));
    this.lastServers = model.servers;
    this.lastFiles = model.certificates;
    this.lastGateway = model.gateway;
    this.lastCertificates = {
      table: { version: versionOf(certificates), certificates },
      files,
      digest: filesDigest(files),
    };
    return this.lastCertificates;
  }
}

function balanceOf(u: BalancedUpstream): BalanceMethod {
  if (u.hashKey === null) return u.leastConn ? 'ewma' : 'round_robin';
  return u.hashKey.startsWith(AFFINITY_KEY_PREFIX) ? 'sticky' : 'chash';
}

/** peerOf splits an endpoint as nginx.conf writes it (`10.0.0.1:80`, `[fd00::1]:80`) into address and port. */
function peerOf(address: string): BackendPeer {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  return { address: host.startsWith('[') ? host.slice(1, -1) : host, port: Number(address.slice(colon + 1)) };
}

/** pemPair splits a certificate file's PEM (the chain, then the key last) into a table entry's cert and key. */
function pemPair(pem: string): PemPair {
  const key = pem.lastIndexOf('-----BEGIN ');
  return { cert: pem.slice(0, key).trimEnd(), key: pem.slice(key) };
}

function versionOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 32);
}

/** mostMirrors is how many `mirror` slots routes need: the most RequestMirror filters one of them has. */
export function mostMirrors(routes: readonly { readonly filters: readonly { readonly type: string }[] }[]): number {
  return routes.reduce((n, r) => Math.max(n, r.filters.filter((f) => f.type === 'RequestMirror').length), 0);
}

/**
 * tablesForReload are the tables pushed just before a reload is signalled: the new ones, plus the entries only
 * the old ones had, so that old workers (still serving the old config) and new workers both find theirs.
 * The version differs from the new tables', so the exact ones follow once the reload is confirmed.
 * A Gateway server whose routes need more mirror slots than the running nginx.conf gave it keeps its old routes
 * until then: its new ones take effect with the reload that brings their mirrors, not before without them.
 */
export function tablesForReload(next: DynamicTables, previous: DynamicTables | null): DynamicTables {
  if (previous === null) return next;
  const names = new Set(next.backends.backends.map((b) => b.name));
  const keys = new Set(next.routes.servers.map((s) => s.key));
  const before = new Map((previous.routes?.servers ?? []).map((s) => [s.key, s]));
  let held = false;
  const kept = next.routes.servers.map((s) => {
    const old = before.get(s.key);
    if (old === undefined || mostMirrors(s.routes) <= mostMirrors(old.routes)) return s;
    held = true;
    return old;
  });
  const servers = [...kept, ...(previous.routes?.servers ?? []).filter((s) => !keys.has(s.key))];
  // an old Secret's entry stays for the old workers, with what no new entry serves (each host and key once)
  const secrets = new Set(next.certificates.certificates.map((c) => c.secret));
  const taken = new Set(servedNames(next.certificates));
  const backends = [...next.backends.backends, ...previous.backends.backends.filter((b) => !names.has(b.name))];
  const certificates = [
    ...next.certificates.certificates,
    ...previous.certificates.certificates
      .filter((c) => !secrets.has(c.secret))
      .map((c) => ({
        ...c,
        hosts: c.hosts.filter((h) => !taken.has(h)),
        servers: c.servers.filter((k) => !taken.has(`server ${k}`)),
      }))
      .filter((c) => c.hosts.length > 0 || c.servers.length > 0),
  ];
  return {
    backends:
      backends.length === next.backends.backends.length
        ? next.backends
        : { version: `u-${next.backends.version}`, backends },
    certificates:
      certificates.length === next.certificates.certificates.length
        ? next.certificates
        : { version: `u-${next.certificates.version}`, certificates },
    routes:
      servers.length === next.routes.servers.length && !held
        ? next.routes
        : { version: `u-${next.routes.version}`, servers },
  };
}
