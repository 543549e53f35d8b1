/**
 * The config the API state implies: the API server's own objects (read from its registry, not
 * through any client), scoped as the controller's watchers scope them, through the same pure
 * buildModel and render the controller uses, with the template it should be using.
 */
import type { ControllerConfig } from '../../src/config.js';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import type { ApiServer } from '../../src/dev/api-server/server.js';
import { BuildMemo, buildModel } from '../../src/model/build.js';
import type { BuildOptions } from '../../src/model/build-types.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { SharedServer } from '../../src/sync/shared-server.js';
import type { DynamicTables } from '../../src/model/pushed-tables.js';
import { emptySnapshot, type KubeObject, type Snapshot } from '../../src/model/snapshot.js';
import { render, type NginxTemplate } from '../../src/render/render.js';

function objects(api: ApiServer, apiVersion: string, kind: string, namespace: string | null): KubeObject[] {
  const resource = findResourceByKind(apiVersion, kind);
  if (!resource) throw new Error(`the API server serves no ${apiVersion} ${kind}`);
  // structuredClone: buildModel must not see (or keep) the registry's live objects.
  return structuredClone(
    api.registry.list(resource, resource.namespaced && namespace ? { namespace } : {}).items,
  ) as KubeObject[];
}

/** apiSnapshot is what the controller's caches should hold once its watchers caught up. */
export function apiSnapshot(api: ApiServer, config: ControllerConfig): Snapshot {
  const ns = config.watchNamespace;
  const configMap = config.build.configMap ?? null;
  return {
    ...emptySnapshot,
    ingresses: objects(api, 'networking.k8s.io/v1', 'Ingress', ns),
    ingressClasses: objects(api, 'networking.k8s.io/v1', 'IngressClass', null),
    services: objects(api, 'v1', 'Service', ns),
    endpointSlices: objects(api, 'discovery.k8s.io/v1', 'EndpointSlice', ns),
    secrets: objects(api, 'v1', 'Secret', ns),
    // The ConfigMap watcher watches the --configmap object only, whatever --watch-namespace says.
    configMaps: configMap
      ? objects(api, 'v1', 'ConfigMap', null).filter(
          (o) => `${o.metadata?.namespace}/${o.metadata?.name}` === configMap,
        )
      : [],
  } as Snapshot;
}

/**
 * expectedState is `render(buildModel(snapshot of the API server's objects))`, without the `excluded` Ingresses
 * (`namespace/name`), built with the controller's own build options (what its start found: Lua, modules, sockets);
 * with the Lua balancer, split as the controller splits it: nginx.conf without endpoints and host certificates, and
 * the tables it pushes.
 */
export function expectedState(
  api: ApiServer,
  config: ControllerConfig,
  template: NginxTemplate,
  build: BuildOptions,
  excluded: ReadonlySet<string> = new Set(),
): { config: string; tables: DynamicTables | null; profiles: ReadonlySet<string> | null } {
  const snapshot = apiSnapshot(api, config);
  const kept =
    excluded.size === 0
      ? snapshot
      : {
          ...snapshot,
          ingresses: snapshot.ingresses.filter((i) => !excluded.has(`${i.metadata?.namespace}/${i.metadata?.name}`)),
        };
  const memo = new BuildMemo();
  const { model } = buildModel(kept, build, memo);
  if (!build.dynamic) return { config: render(model, template), tables: null, profiles: null };
  const split = new DynamicSplit().split(model);
  // routes as data, as a sync shares the hosts: the profiles this state uses (a controller that lived through other
  // states keeps more: withoutKeptProfiles)
  const sharing = new SharedServer().share(split.model, template.sources, memo.view?.baseConfig);
  return {
    config: render(sharing?.model ?? split.model, template),
    tables: sharing?.table ? { ...split.tables, ingress: sharing.table } : split.tables,
    profiles: sharing?.table?.profiles ?? null,
  };
}

/** A profile's blocks: its named location, its auth-url location and its auth-signin location, by the profile's key. */
const PROFILE_BLOCK = /^ {8}location (?:= )?"?(?:@ia_p_|\/_external-auth-|@ia_signin_)([0-9a-f]{32})"? \{$/;

/**
 * withoutKeptProfiles is the live nginx.conf less what routes as data keeps on purpose from states before this one:
 * the profiles no path of this state uses (kept so that a deleted Ingress is a push, not a reload) and the maps and
 * limit zones only they name. What is left must equal the config this state implies, byte for byte.
 */
export function withoutKeptProfiles(live: string, expected: string, profiles: ReadonlySet<string>): string {
  const wanted = new Set(expected.split('\n'));
  const lines = live.split('\n');
  const out: string[] = [];
  // drops a block from its opening line to the line closing it at the same indent, with the comments and the blank
  // line before it
  const skip = (from: number, indent: string) => {
    while (out.length > 0 && out.at(-1)!.startsWith(`${indent}#`)) out.pop();
    if (out.at(-1) === '') out.pop();
    let i = from;
    while (i < lines.length && lines[i] !== `${indent}}`) i++;
    return i;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const profile = PROFILE_BLOCK.exec(line);
    if (profile && !profiles.has(profile[1]!)) i = skip(i, '        ');
    else if (/^ {4}map .* \{$/.test(line) && !wanted.has(line)) i = skip(i, '    ');
    else if (/^ {4}limit_(req|conn)_zone /.test(line) && !wanted.has(line)) continue;
    else out.push(line);
  }
  return out.join('\n');
}
