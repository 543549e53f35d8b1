/**
 * CertificateEntries: the certificates table (one entry per Secret's file, naming the hosts and Gateway servers served
 * with it) kept from split to split. A TLS host added among 10,000 changes the entry of its file: the servers that
 * came and went since the last model say which files to look at again (src/model/server-diff.ts), and the table's
 * version and keyed entries follow them (src/model/incremental/keyed-digest.ts), instead of every server walked and
 * every entry compared.
 */
import { entryJson, keyedEntriesOf } from '../model/dynamic-tables.js';
import { KeyedDigest } from '../model/incremental/keyed-digest.js';
import { KeyedSets } from '../model/keyed-sets.js';
import { LayeredMapWriter } from '../model/incremental/layered-map.js';
import { addedAndRemoved } from '../model/incremental/list-diff.js';
import type { Certificate, NginxModel, Server } from '../model/nginx-model.js';
import type { CertificateTable, ServedCertificate } from '../model/pushed-tables.js';
import { changedModelServers, type ModelServers } from '../model/server-diff.js';
import { certificateProblem } from '../model/table-check.js';

/** PemPair is a certificate file's PEM split into a table entry's chain and key. */
interface PemPair {
  readonly cert: string;
  readonly key: string;
}

/** servesCertificate: a server whose host the certificates table names */
const servesCertificate = (s: Server) => !s.inheritsCertificate && s.certificateFile !== null && !s.isDefault;

export class CertificateEntries {
  private servers: ModelServers | null = null;
  /** each file's Ingress hosts (servers that serve a certificate) */
  private readonly hostsByFile = new KeyedSets<string, string>();
  private certificates: readonly Certificate[] = [];
  private byFile = new Map<string, Certificate>();
  private gateway: NginxModel['gateway'] = null;
  /** each file's Gateway server keys, in the Gateway servers' order */
  private gatewayByFile = new Map<string, string[]>();
  /** the entry served for each file, and the Secret key it is pushed under */
  private readonly entries = new Map<string, ServedCertificate>();
  private readonly fileOfKey = new Map<string, string>();
  private readonly json = new LayeredMapWriter<string, string>();
  private readonly digest = new KeyedDigest();
  /** each certificate file's PEM split in two, once per file object */
  private readonly pemOf = new WeakMap<Certificate, PemPair>();
  private table: CertificateTable | null = null;

  /** update brings the table to `model`'s servers and files; the same table while no served file changed. */
  update(model: NginxModel): CertificateTable {
    const dirty = new Set<string>();
    const { added, removed } = changedModelServers(this.servers, model);
    this.servers = { defaultServer: model.defaultServer, servers: model.servers };
    // taken out before put in: a host whose server was replaced stays in its file's hosts
    const serving = (servers: readonly Server[]) => servers.filter(servesCertificate);
    for (const server of serving(removed)) this.hostsByFile.delete(server.certificateFile!, server.host);
    for (const server of serving(added)) this.hostsByFile.add(server.certificateFile!, server.host);
    for (const server of serving([...removed, ...added])) dirty.add(server.certificateFile!);
    if (model.certificates !== this.certificates) {
      const files = addedAndRemoved(this.certificates, model.certificates);
      for (const c of [...files.added, ...files.removed]) dirty.add(c.file);
      this.certificates = model.certificates;
      this.byFile = new Map(model.certificates.map((c) => [c.file, c]));
    }
    if (model.gateway !== this.gateway) {
      const next = new Map<string, string[]>();
      for (const server of model.gateway?.servers ?? []) {
        if (server.certificateFile === null) continue;
        const keys = next.get(server.certificateFile);
        if (keys) keys.push(server.key);
        else next.set(server.certificateFile, [server.key]);
      }
      for (const file of [...this.gatewayByFile.keys(), ...next.keys()]) dirty.add(file);
      this.gateway = model.gateway;
      this.gatewayByFile = next;
    }
    if (dirty.size === 0 && this.table !== null) return this.table;
    for (const file of dirty) this.settle(file);
    this.table = { version: this.digest.version(), certificates: [...this.entries.values()] };
    keyedEntriesOf(this.table, this.json.view());
    return this.table;
  }

  /** served says whether a file's certificate is pushed (nginx.conf need not name it). */
  served(file: string): boolean {
    return this.entries.has(file);
  }

  /** settle makes a file's entry again from its certificate, hosts and Gateway servers (none: no entry). */
  private settle(file: string): void {
    const last = this.entries.get(file);
    const next = this.entryOf(file, last);
    if (next === last) return;
    if (last !== undefined) {
      this.entries.delete(file);
      this.fileOfKey.delete(last.secret);
      this.json.delete(last.secret);
      this.digest.delete(last.secret);
    }
    if (next === undefined) return;
    const json = entryJson(next);
    this.entries.set(file, next);
    this.fileOfKey.set(next.secret, file);
    this.json.set(next.secret, json);
    this.digest.set(next.secret, json);
  }

  private entryOf(file: string, last: ServedCertificate | undefined): ServedCertificate | undefined {
    const certificate = this.byFile.get(file);
    if (!certificate?.pem) return undefined;
    // code-unit order, as the build sorts its servers by host
    const hosts = [...this.hostsByFile.get(file)].sort();
    const servers = this.gatewayByFile.get(file) ?? [];
    if (hosts.length === 0 && servers.length === 0) return undefined;
    let pem = this.pemOf.get(certificate);
    if (pem === undefined) this.pemOf.set(certificate, (pem = pemPair(certificate.pem)));
    const secret = this.keyFor(certificate.id, file, last);
    // never for a Secret the API server stores (at most 1 MiB): nginx would refuse it, so it is not sent
    if (certificateProblem(secret, pem.cert, pem.key) !== null) return undefined;
    if (last !== undefined && sameEntry(last, secret, pem, hosts, servers)) return last;
    return { secret, ...pem, hosts, servers };
  }

  /**
   * keyFor is the key a file's entry is pushed under: its Secret's `namespace/name`, or, should another file hold that
   * key (the default certificate's file and an Ingress's of one Secret), that key with `#<n>`.
   */
  private keyFor(id: string, file: string, last: ServedCertificate | undefined): string {
    if (last !== undefined && (last.secret === id || last.secret.startsWith(`${id}#`))) return last.secret;
    const holder = this.fileOfKey.get(id);
    if (holder === undefined || holder === file) return id;
    for (let n = 1; ; n++) if (!this.fileOfKey.has(`${id}#${n}`)) return `${id}#${n}`;
  }
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

/** pemPair splits a certificate file's PEM (the chain, then the key last) into a table entry's cert and key. */
function pemPair(pem: string): PemPair {
  const key = pem.lastIndexOf('-----BEGIN ');
  return { cert: pem.slice(0, key).trimEnd(), key: pem.slice(key) };
}
