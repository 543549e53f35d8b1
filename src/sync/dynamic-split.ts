/**
 * DynamicSplit: the model as the Lua balancer serves it. The table types stay in the model
 * (src/model/pushed-tables.ts); the split, with its memo of the last answer, is the sync's.
 */
import { AFFINITY_KEY_PREFIX } from '../model/annotations/http-extras.js';
import { EMPTY_ROUTES, entryJson, keyedEntriesOf } from '../model/dynamic-tables.js';
import { CertificateEntries } from './certificate-entries.js';
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
} from '../model/pushed-tables.js';
import { filesDigest } from '../model/files-digest.js';
import type { BalancedUpstream, Certificate, NginxModel } from '../model/nginx-model.js';

/**
 * DynamicSplit is the model as the Lua balancer serves it: nginx.conf names neither endpoints nor host
 * certificates, so those go into the pushed tables and out of the files the nginx actor writes. It keeps
 * the last answer for the same model parts (incremental builds hand them back as the same objects), so
 * an unchanged table is not serialised and hashed again.
 */
export class DynamicSplit {
  private lastUpstreams: readonly BalancedUpstream[] | null = null;
  private lastBackends: BackendTable | null = null;
  /** the certificates table, kept as the servers and files change */
  private readonly certificateEntries = new CertificateEntries();
  private lastCertificates: {
    table: CertificateTable;
    from: Pick<NginxModel, 'certificates' | 'gateway' | 'defaultCertificateFile'>;
    files: readonly Certificate[];
    digest: string;
  } | null = null;
  /** the certificate files the stream block names (TLS Terminate), one per line */
  private lastStreamFiles = '';
  /** the backends table's entries by name (JSON) and their version, as the upstreams change */
  private readonly backendEntries = new LayeredMapWriter<string, string>();
  private readonly backendDigest = new KeyedDigest();
  /** each upstream's Backend, made once per upstream object (an incremental build hands unchanged ones back) */
  private readonly backendOf = new WeakMap<BalancedUpstream, Backend>();

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
    const table = this.certificateEntries.update(model);
    // TLS Terminate's stream servers name their certificate files: written, whoever else pushes the same Secret
    const streamFiles = (model.stream?.gateway?.terminations ?? []).map((t) => t.certificateFile);
    const streamKey = streamFiles.join('\n');
    const last = this.lastCertificates;
    const from = last?.from;
    if (
      last !== null &&
      last.table === table &&
      from?.certificates === model.certificates &&
      from.gateway === model.gateway &&
      from.defaultCertificateFile === model.defaultCertificateFile &&
      streamKey === this.lastStreamFiles
    )
      return last;
    // nginx.conf names what is not pushed, and the default certificate, a Gateway catch-all's and TLS Terminate's
    const named = new Set([model.defaultCertificateFile, ...streamFiles]);
    for (const server of model.gateway?.servers ?? [])
      if (server.fileCertificate !== null) named.add(server.fileCertificate);
    const files = model.certificates.filter((c) => named.has(c.file) || !this.certificateEntries.served(c.file));
    this.lastStreamFiles = streamKey;
    const { certificates, gateway, defaultCertificateFile } = model;
    this.lastCertificates = {
      table,
      from: { certificates, gateway, defaultCertificateFile },
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
