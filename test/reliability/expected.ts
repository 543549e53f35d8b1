/**
 * The config the API state implies: the API server's own objects (read from its registry, not
 * through any client), scoped as the controller's watchers scope them, through the same pure
 * buildModel and render the controller uses, with the template it should be using.
 */
import type { ControllerConfig } from '../../src/config.js';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import type { ApiServer } from '../../src/dev/api-server/server.js';
import { buildModel } from '../../src/model/build.js';
import type { BuildOptions } from '../../src/model/build-types.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
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
): { config: string; tables: DynamicTables | null } {
  const snapshot = apiSnapshot(api, config);
  const kept =
    excluded.size === 0
      ? snapshot
      : {
          ...snapshot,
          ingresses: snapshot.ingresses.filter((i) => !excluded.has(`${i.metadata?.namespace}/${i.metadata?.name}`)),
        };
  const { model } = buildModel(kept, build);
  if (!build.dynamic) return { config: render(model, template), tables: null };
  const split = new DynamicSplit().split(model);
  return { config: render(split.model, template), tables: split.tables };
}
