/**
 * The push path's quarantine: a table entry nginx refuses costs the objects that made it, as a refused reload costs
 * the Ingress it points at (src/sync/quarantine.ts). nginx applies every other entry and names the refused ones
 * (lua/ingress_actors/validate.lua); here each is traced to its objects in the model it was built from, and those
 * are held until they change:
 * - a backend: the Ingresses proxying to it are left out of the next builds, with a problem (a Warning Event);
 * - a certificate: its Secret is left out (the hosts naming it get the default certificate and a problem);
 * - a shared host's routes (routes as data): the Ingresses with a path on that host are left out, with a problem;
 * - a route rule: the HTTPRoute or GRPCRoute is built (so it keeps its status) but its entries are not pushed, and
 *   its parents say Accepted=False with nginx's reason.
 *
 * Pure bookkeeping: refused entries, the model they came from and snapshots in; a snapshot, problems and routes out.
 */
import type { RefusedEntry } from '../../machines/events.js';
import { routeTableOf } from '../model/dynamic-tables.js';
import type { RouteTable } from '../model/pushed-tables.js';
import type { GatewayStatus, RouteStatus } from '../model/gateway/routes.js';
import { cond } from '../model/gateway/listeners.js';
import type { NginxModel, Problem } from '../model/nginx-model.js';
import type { KubeObject, Snapshot } from '../model/snapshot.js';

type HeldKind = 'Ingress' | 'Secret' | 'HTTPRoute' | 'GRPCRoute';

interface Held {
  readonly kind: HeldKind;
  /** `namespace/name` */
  readonly key: string;
  /** the object when it was held: a changed object (a new one in the cache) is let back in */
  readonly object: KubeObject;
  readonly field: string;
  /** what nginx refused: `<table> entry <key>: <reason>` */
  readonly refusal: string;
  /** the objects that name a held Secret (its Ingresses): the problem goes to them too, as Events are theirs */
  readonly also: readonly Owner[];
}

interface Owner {
  readonly kind: HeldKind;
  readonly key: string;
  readonly field: string;
  readonly also?: readonly Owner[];
}

/** Built is what the refused entries were pushed from: the whole model (its certificates before the split). */
export interface Built {
  readonly model: NginxModel;
  readonly snapshot: Snapshot;
}

const keyOf = (o: KubeObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

function listOf(snapshot: Snapshot, kind: HeldKind): readonly KubeObject[] {
  switch (kind) {
    case 'Ingress':
      return snapshot.ingresses;
    case 'Secret':
      return snapshot.secrets;
    case 'HTTPRoute':
      return snapshot.httpRoutes ?? [];
    case 'GRPCRoute':
      return snapshot.grpcRoutes ?? [];
  }
}

/** routeOwner is the route and rule a route entry's label `<namespace>/<name>#<rule>` names. */
function routeOwner(label: string): { key: string; rule: string } | null {
  const hash = label.lastIndexOf('#');
  return hash > 0 ? { key: label.slice(0, hash), rule: label.slice(hash + 1) } : null;
}

/** TableQuarantine holds the objects whose table entries nginx refused, until they change. */
export class TableQuarantine {
  private readonly held = new Map<string, Held>();

  /** heldKeys are `Kind/namespace/name` of the objects held now, for logs and tests. */
  heldKeys(): string[] {
    return [...this.held.keys()].sort();
  }

  /** heldSecrets are `namespace/name` of the Secrets held: their changes must still bring a sync. */
  heldSecrets(): string[] {
    return [...this.held.values()].filter((h) => h.kind === 'Secret').map((h) => h.key);
  }

  /** judge traces each refused entry to the objects that made it, in what it was pushed from, and holds them. */
  judge(entries: readonly RefusedEntry[], built: Built | null): void {
    if (built === null) return;
    for (const entry of entries) {
      const refusal = `${entry.table} entry ${entry.key}: ${entry.reason}`;
      for (const owner of ownersOf(entry, built.model)) {
        const object = listOf(built.snapshot, owner.kind).find((o) => keyOf(o) === owner.key);
        if (object) this.held.set(`${owner.kind}/${owner.key}`, { ...owner, object, refusal, also: owner.also ?? [] });
      }
    }
  }

  /**
   * prepare lets back in what changed (or is gone) since it was held, and takes the held Ingresses and Secrets out
   * of the snapshot; every held object gets a problem (a Warning Event).
   */
  prepare(snapshot: Snapshot): { snapshot: Snapshot; problems: Problem[] } {
    if (this.held.size === 0) return { snapshot, problems: [] };
    for (const [id, held] of this.held)
      if (listOf(snapshot, held.kind).find((o) => keyOf(o) === held.key) !== held.object) this.held.delete(id);
    const problems = [...this.held.values()].flatMap((h) => {
      const what =
        h.kind === 'Secret'
          ? `Secret ${h.key} is left out`
          : h.kind === 'Ingress'
            ? 'it is left out'
            : 'its rules are not served';
      const message = `nginx refused the ${h.refusal}; ${what} until it changes`;
      return [h, ...h.also].map((o) => {
        const [namespace = '', name = ''] = o.key.split('/');
        return { kind: o.kind, namespace, name, field: o.field, message };
      });
    });
    const out = (kind: HeldKind) => new Set([...this.held.values()].filter((h) => h.kind === kind).map((h) => h.key));
    const [ingresses, secrets] = [out('Ingress'), out('Secret')];
    return {
      snapshot: {
        ...snapshot,
        ingresses: ingresses.size ? snapshot.ingresses.filter((i) => !ingresses.has(keyOf(i))) : snapshot.ingresses,
        secrets: secrets.size ? snapshot.secrets.filter((s) => !secrets.has(keyOf(s))) : snapshot.secrets,
      },
      problems,
    };
  }

  /**
   * routes leaves the held routes' entries out of the route table and says so in their status: each parent's
   * Accepted turns False with nginx's reason. Both are returned as they were when no route is held.
   */
  routes(table: RouteTable, status: GatewayStatus | null): { table: RouteTable; status: GatewayStatus | null } {
    const held = new Map(
      [...this.held.values()].filter((h) => h.kind === 'HTTPRoute' || h.kind === 'GRPCRoute').map((h) => [h.key, h]),
    );
    if (held.size === 0) return { table, status };
    const servers = table.servers.map((s) => ({
      ...s,
      routes: s.routes.filter((r) => !held.has(routeOwner(r.route)?.key ?? '')),
    }));
    const mark = (kind: HeldKind, list: readonly RouteStatus[]): RouteStatus[] =>
      list.map((r) => {
        const h = held.get(`${r.namespace}/${r.name}`);
        if (h === undefined || h.kind !== kind) return r;
        const message = `nginx refused the ${h.refusal}; its rules are not served until it changes`;
        const parents = r.parents.map((p) => ({
          ...p,
          conditions: p.conditions.map((c) =>
            c.type === 'Accepted' ? cond('Accepted', false, 'UnsupportedValue', message, c.observedGeneration) : c,
          ),
        }));
        return { ...r, parents };
      });
    return {
      table: routeTableOf(servers),
      status:
        status === null
          ? null
          : {
              ...status,
              httpRoutes: mark('HTTPRoute', status.httpRoutes),
              ...(status.grpcRoutes ? { grpcRoutes: mark('GRPCRoute', status.grpcRoutes) } : {}),
            },
    };
  }
}

/** ownersOf are the objects whose fields made a table entry, and the field. */
function ownersOf(entry: RefusedEntry, model: NginxModel): Owner[] {
  switch (entry.table) {
    case 'backends': {
      const ingresses = model.servers
        .flatMap((s) => s.locations)
        .filter((l) => l.upstream === entry.key || l.pass?.canary === entry.key)
        .flatMap((l) => (l.ingress === null ? [] : [l.ingress]));
      const routes = (model.gateway?.routes.servers ?? []).flatMap((s) =>
        s.routes.filter(
          (r) =>
            r.backends.some((b) => b.backend === entry.key) ||
            r.filters.some((f) => f.type === 'RequestMirror' && f.backend === entry.key),
        ),
      );
      return [
        ...[...new Set(ingresses)].map((key) => ({ kind: 'Ingress' as const, key, field: 'spec.rules' })),
        ...routes.flatMap((r) => routeOwners(r.route, r.grpc === true)),
      ];
    }
    case 'certificates': {
      const secret = certificateSecret(entry.key, model);
      if (secret === null) return [];
      return [{ kind: 'Secret', key: secret, field: 'data', also: namingIngresses(secret, model) }];
    }
    case 'routes': {
      const space = entry.key.indexOf(' ');
      const label = entry.key.slice(space + 1);
      const serverKey = entry.key.slice(0, space);
      const server = model.gateway?.routes.servers.find((s) => s.key === serverKey);
      const grpc = server?.routes.some((r) => r.route === label && r.grpc === true) ?? false;
      return routeOwners(label, grpc);
    }
    case 'ingress': {
      // a shared host's routes: nginx validates a host whole, so each Ingress with a path there is held
      const server = [model.defaultServer, ...model.servers].find((s) => s.host === entry.key);
      return (server?.ingresses ?? []).map((key) => ({ kind: 'Ingress' as const, key, field: 'spec.rules' }));
    }
  }
}

function routeOwners(label: string, grpc: boolean): Owner[] {
  const owner = routeOwner(label);
  return owner ? [{ kind: grpc ? 'GRPCRoute' : 'HTTPRoute', key: owner.key, field: `spec.rules[${owner.rule}]` }] : [];
}

/** namingIngresses are the Ingresses whose spec.tls names the Secret `namespace/name` (of its namespace). */
function namingIngresses(secret: string, model: NginxModel): Owner[] {
  const files = new Set(model.certificates.filter((c) => c.id === secret).map((c) => c.file));
  const namespace = secret.slice(0, secret.indexOf('/') + 1);
  const keys = model.servers
    .filter((s) => s.certificateFile !== null && files.has(s.certificateFile))
    .flatMap((s) => s.ingresses)
    .filter((key) => key.startsWith(namespace));
  return [...new Set(keys)].sort().map((key) => ({ kind: 'Ingress' as const, key, field: 'spec.tls' }));
}

/** certificateSecret is the Secret (`namespace/name`) of a certificate entry's key: the Secret's (`#<n>` after it). */
function certificateSecret(key: string, model: NginxModel): string | null {
  const id = key.replace(/#[0-9]{1,4}$/, '');
  return model.certificates.some((c) => c.id === id) && id !== 'default' ? id : null;
}
