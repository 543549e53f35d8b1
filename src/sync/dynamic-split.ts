/**
 * DynamicSplit: the model as the Lua balancer serves it. The table types stay in the model
 * (src/model/pushed-tables.ts); the split, with its memo of the last answer, is the sync's.
 */
import { AFFINITY_KEY_PREFIX } from '../model/annotations/http-extras.js';
import { EMPTY_ROUTES, entriesVersion, entryJson, keyedEntriesOf } from '../model/dynamic-tables.js';
import { KeyedDigest } from '../model/incremental/keyed-digest.js';
import { LayeredMapWriter } from '../model/incremental/layered-map.js';
import { listChange } from '../model/incremental/list-diff.js';
import type {
  Backend,
  BackendPeer,
  BackendTable,
  BalanceMethod,
  CertificateTable,
  DynamicTables,
  ServedCertificate,
} from '../model/pushed-tables.js';
import { filesDigest } from '../model/files-digest.js';
import type { BalancedUpstream, Certificate, NginxModel, Server } from '../model/nginx-model.js';
import { certificateProblem } from '../model/table-check.js';

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
  /** the certificate files the stream block names (TLS Terminate), one per line */
  private lastStreamFiles = '';
  /** the backends table's entries by name (JSON) and their version, as the upstreams change */
  private readonly backendEntries = new LayeredMapWriter<string, string>();
  private readonly backendDigest = new KeyedDigest();
  /** each upstream's Backend, made once per upstream object (an incremental build hands unchanged ones back) */
  private readonly backendOf = new WeakMap<BalancedUpstream, Backend>();
  /** each certificate file's PEM split in two, once per file object */
  private readonly pemOf = new WeakMap<Certificate, PemPair>();
  /** the last table's entries by Secret: an entry equal to its last one is that object again (its JSON made once) */
  private lastEntries = new Map<string, ServedCertificate>();

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
    // Upstream lists keep their order (by name) and hand unchanged upstreams back as the same objects: only the
    // changed middle is looked at, and the table's version and entries follow it (one change at 10,000 backends
    // costs that change, not a walk of 10,000).
    const before = this.lastUpstreams ?? [];
    const { start, end, gone, came } = listChange(before, upstreams);
    const made = came.map((u) => this.backendOfUpstream(u));
    for (const u of gone) {
      this.backendEntries.delete(u.name);
      this.backendDigest.delete(u.name);
    }
    for (const b of made) {
      const json = entryJson(b);
      this.backendEntries.set(b.name, json);
      this.backendDigest.set(b.name, json);
    }
    const last = this.lastBackends?.backends ?? [];
    const backends = [...last.slice(0, start), ...made, ...last.slice(last.length - end)];
    this.lastUpstreams = upstreams;
    this.lastBackends = { version: this.backendDigest.version(), backends };
    keyedEntriesOf(this.lastBackends, this.backendEntries.view());
    return this.lastBackends;
  }

  private backendOfUpstream(u: BalancedUpstream): Backend {
    let backend = this.backendOf.get(u);
    if (backend === undefined) {
      backend = {
        name: u.name,
        balance: balanceOf(u),
        hashKey: u.hashKey,
        endpoints: u.endpoints.map((e) => peerOf(e.address)),
      };
      this.backendOf.set(u, backend);
    }
    return backend;
  }

  private certificatesOf(model: NginxModel): {
    table: CertificateTable;
    files: readonly Certificate[];
    digest: string;
  } {
    // TLS Terminate's stream servers name their certificate files: written, whoever else pushes the same Secret
    const streamFiles = (model.stream?.gateway?.terminations ?? []).map((t) => t.certificateFile);
    const streamKey = streamFiles.join('\n');
    if (
      this.lastCertificates &&
      streamKey === this.lastStreamFiles &&
      this.lastServers !== null &&
      this.lastFiles !== null &&
      model.gateway === this.lastGateway &&
      sameItems(model.certificates, this.lastFiles) &&
      noCertificateChanged(this.lastServers, model.servers)
    ) {
      this.lastServers = model.servers;
      this.lastFiles = model.certificates;
      return this.lastCertificates;
    }
    const servers = [model.defaultServer, ...model.servers];
    const byFile = new Map(model.certificates.map((c) => [c.file, c]));
    // one entry per certificate file (a Secret's), naming every host and server served with it
    const entries = new Map<string, { secret: string; pem: PemPair; hosts: string[]; servers: string[] }>();
    const entryOf = (file: string | null) => {
      const certificate = file === null ? undefined : byFile.get(file);
      if (!certificate?.pem || file === null) return null;
      let entry = entries.get(file);
      if (!entry) {
        let pem = this.pemOf.get(certificate);
        if (pem === undefined) this.pemOf.set(certificate, (pem = pemPair(certificate.pem)));
        entry = { secret: certificate.id, pem, hosts: [], servers: [] };
        entries.set(file, entry);
      }
      return entry;
    };
    for (const server of servers)
      if (servesCertificate(server)) entryOf(server.certificateFile)?.hosts.push(server.host);
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
      const last = this.lastEntries.get(secret);
      certificates.push(
        last !== undefined && sameEntry(last, secret, entry.pem, entry.hosts, entry.servers)
          ? last
          : { secret, ...entry.pem, hosts: entry.hosts, servers: entry.servers },
      );
      served.add(file);
    }
    served.delete(model.defaultCertificateFile);
    // a Gateway catch-all names its certificate in nginx.conf, even when another server pushes the same one
    for (const server of model.gateway?.servers ?? [])
      if (server.fileCertificate !== null) served.delete(server.fileCertificate);
    for (const file of streamFiles) served.delete(file);
    const files = model.certificates.filter((c) => !served.has(c.file));
    this.lastEntries = new Map(certificates.map((c) => [c.secret, c]));
    this.lastServers = model.servers;
    this.lastFiles = model.certificates;
    this.lastGateway = model.gateway;
    this.lastStreamFiles = streamKey;
    this.lastCertificates = {
      table: { version: entriesVersion(certificates), certificates },
      files,
      digest: filesDigest(files),
    };
    return this.lastCertificates;
  }
}

const sameItems = <T>(a: readonly T[], b: readonly T[]) =>
  a === b || (a.length === b.length && a.every((x, i) => x === b[i]));

/** servesCertificate: a server whose host the certificates table names (see certificatesOf) */
const servesCertificate = (s: Server) => !s.inheritsCertificate && s.certificateFile !== null && !s.isDefault;

/**
 * noCertificateChanged: between two server lists (in host order, unchanged servers the same objects), no server that
 * came or went serves a certificate, so the certificates table is the same. A change to a host without TLS among
 * 10,000 costs a walk of reference comparisons, not a table made again.
 */
function noCertificateChanged(before: readonly Server[], after: readonly Server[]): boolean {
  const { gone, came } = listChange(before, after);
  return !gone.some(servesCertificate) && !came.some(servesCertificate);
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

/** sameEntry: `last` serves the same PEM for the same hosts and servers, in the same order */
function sameEntry(
  last: ServedCertificate,
  secret: string,
  pem: PemPair,
  hosts: readonly string[],
  servers: readonly string[],
): boolean {
  const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  return (
    last.secret === secret &&
    last.cert === pem.cert &&
    last.key === pem.key &&
    same(last.hosts, hosts) &&
    same(last.servers, servers)
  );
}

/** PemPair is a certificate file's PEM split into a table entry's chain and key. */
interface PemPair {
  readonly cert: string;
  readonly key: string;
}

/** pemPair splits a certificate file's PEM (the chain, then the key last) into a table entry's cert and key. */
function pemPair(pem: string): PemPair {
  const key = pem.lastIndexOf('-----BEGIN ');
  return { cert: pem.slice(0, key).trimEnd(), key: pem.slice(key) };
}
