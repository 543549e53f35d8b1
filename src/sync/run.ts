import { fromPromise } from 'xstate';
import type { RunSyncInput, RunSyncOutput } from '../../machines/syncEffects.js';
import { formatProblem } from '../model/problems.js';
import type { Logger } from '../log.js';
import type { ClusterCache } from '../kube/cache.js';
import { BuildMemo, buildModel, secretsRead } from '../model/build.js';
import type { BuildOptions, BuildResult } from '../model/build-types.js';
import { Quarantine } from './quarantine.js';
import { type Built, TableQuarantine } from './table-quarantine.js';
import { blame } from './blame.js';
import { ServedIngresses } from '../kube/status.js';
import { RenderedText, type NginxTemplate } from '../render/render.js';
import { DynamicSplit } from './dynamic-split.js';
import { IgnoredIngresses } from './ignored.js';
import { SharedServer } from './shared-server.js';
import type { NginxModel } from '../model/nginx-model.js';
import type { Snapshot } from '../model/snapshot.js';

/** SyncOptions are what a sync needs besides the actors it talks to. */
export interface SyncOptions {
  readonly cache: ClusterCache;
  readonly build: BuildOptions;
  readonly log: Logger;
  /** how long each completed sync took, for /metrics */
  readonly observeDuration: (durationMs: number) => void;
  /** each sync's snapshot and whole model (before the Lua balancer's tables are split off), for /metrics */
  readonly observeModel?: (snapshot: Snapshot, model: NginxModel) => void;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

/**
 * SyncMemory is what one sync leaves the next: the build memo (one changed Ingress costs little), the quarantines
 * (what nginx refused costs only the objects it points at), the table split's memo, the problems already logged and
 * the Ingresses of other classes already said. It travels in the sync's value and lives in the sync queue's context
 * (`memory`, opaque there): a queue the supervisor restarts starts with none, so no bad state outlives it by accident.
 */
export class SyncMemory {
  /** problems logged when they appeared, not again on every sync */
  reported = new Set<string>();
  /** Ingresses of other classes: said once per change, not on every sync */
  readonly ignored = new IgnoredIngresses();
  /** lends each build what the previous one worked out */
  readonly memo = new BuildMemo();
  /** Ingresses nginx -t refused, and the bisection that finds them */
  readonly quarantine = new Quarantine((output, handed) => blame(output, handed.text, handed.model));
  /** with the Lua balancer, endpoints and host certificates go to nginx as tables, not as nginx.conf text */
  readonly split: DynamicSplit | null;
  /** table entries nginx refused cost the objects that made them; `lastBuilt` is what the last tables came from */
  readonly tableQuarantine = new TableQuarantine();
  lastBuilt: Built | null = null;
  /** with routes as data, the shared server's profiles and its hosts' routes (src/sync/shared-server.ts) */
  readonly shared: SharedServer | null;
  /** the last nginx.conf and the model it was rendered from: a sync that changed only pushed data renders nothing */
  readonly text = new RenderedText();
  /** the served Ingresses, worked out for the servers that changed */
  readonly served = new ServedIngresses();

  constructor(dynamic: boolean) {
    this.split = dynamic ? new DynamicSplit() : null;
    this.shared = dynamic ? new SharedServer() : null;
  }
}

/**
 * syncActors implements the sync queue's `runSync`: snapshot the caches, build the model, render it with the
 * template the queue was given, and return one value: the text, the files it names and the tables (what nginx should
 * serve), the Secrets the build read, the model, problems and served Ingresses, and the memory the next sync starts
 * from. It sends nothing to any actor: the queue decides push or reload and forwards each part in an event. Problems
 * are logged when they appear, not again on every sync.
 */
export function syncActors(options: SyncOptions) {
  return {
    runSync: fromPromise<RunSyncOutput, RunSyncInput>(async ({ input }) => {
      const started = performance.now();
      const template = input.template as NginxTemplate | null;
      if (!template?.run) throw new Error('no good template loaded yet');
      const memory = input.memory instanceof SyncMemory ? input.memory : new SyncMemory(Boolean(options.build.dynamic));
      const { quarantine, tableQuarantine, memo, split, ignored } = memory;
      const heldBefore = quarantine.heldKeys().join(' ');
      quarantine.judge({ applied: input.applied, refused: input.refused });
      if (input.refused && quarantine.unblamed !== null) {
        options.log.error(
          { reason: quarantine.unblamed },
          'nginx refused the config, and no Ingress is to blame (the ConfigMap or the template?); the last good ' +
            'config stays',
        );
        quarantine.unblamed = null;
      }
      const heldTables = tableQuarantine.heldKeys().join(' ');
      tableQuarantine.judge(input.entriesRefused ?? [], memory.lastBuilt);
      const cached = options.cache.snapshot();
      const prepared = quarantine.prepare(cached);
      const pushHeld = tableQuarantine.prepare(prepared.snapshot);
      const snapshot = pushHeld.snapshot;
      const leftOut = [...prepared.problems, ...pushHeld.problems];
      if (tableQuarantine.heldKeys().join(' ') !== heldTables)
        options.log.warn({ held: tableQuarantine.heldKeys() }, 'objects whose table entries nginx refused are held');
      if (quarantine.heldKeys().join(' ') !== heldBefore || quarantine.awaitingVerdict) {
        options.log.warn(
          { held: quarantine.heldKeys(), awaitingVerdict: quarantine.awaitingVerdict },
          'Ingresses nginx refused are left out',
        );
      }
      const snapshotted = performance.now();
      const whole = buildModel(snapshot, options.build, memo);
      const result = withHeldRoutes(whole, tableQuarantine);
      memory.lastBuilt = { model: result.model, snapshot };
      // The Secret watcher reports only the changes of Secrets this build read.
      const read = secretsRead(memo, options.build, [...quarantine.heldKeys(), ...tableQuarantine.heldSecrets()]);
      const dynamic = split?.split(result.model) ?? null;
      const model = dynamic?.model ?? result.model;
      const problems = leftOut.length > 0 ? [...result.problems, ...leftOut] : result.problems;
      const built = performance.now();
      // Routes as data: what nginx.conf holds is the hosts of their own and the shared server's profiles.
      const sharing = memory.shared?.share(model, template.sources, memo.view?.baseConfig) ?? null;
      const rendering = asNginxConfNamesIt(sharing?.model ?? model);
      const text = memory.text.render(rendering, template);
      const rendered = performance.now();
      const phases = {
        snapshot_ms: round(snapshotted - started),
        build_ms: round(built - snapshotted),
        render_ms: round(rendered - built),
      };
      for (const { ingress, why } of ignored.update(snapshot.ingresses, snapshot.ingressClasses, options.build)) {
        if (why === null) options.log.info({ ingress }, 'Ingress served: its class is ours now');
        else options.log.info({ ingress, reason: why }, 'Ingress ignored: it is not of our class');
      }
      // Each problem once, when it appears; its own words say what is ignored or left out.
      const now = new Map(problems.map((problem) => [formatProblem(problem), problem]));
      for (const [line, problem] of now) {
        if (memory.reported.has(line)) continue;
        const object = problem.namespace ? `${problem.namespace}/${problem.name}` : problem.name;
        options.log.warn({ kind: problem.kind, object, field: problem.field, problem: problem.message }, line);
      }
      memory.reported = new Set(now.keys());
      // The configs built, so that nginx's verdicts (by text) can be read against them.
      quarantine.handedOver({ text, model: rendering, ingresses: snapshot.ingresses, secrets: snapshot.secrets });
      const served = memory.served.of(model);
      // A Secret the watcher judged by the set before, while this build ran, is not lost: whatever in the new set
      // the cache holds differently from what the build read goes to the queue as a change. (Computed as the sync
      // ends: the queue sends the new set on in the same turn, before any watch event can come in between.)
      // Against the cache's own list the build started from: a Secret the quarantine holds out is no change.
      const secretsChanged = options.cache.changedSince('Secret', cached.secrets, read);
      options.observeModel?.(snapshot, result.model);
      const durationMs = performance.now() - started;
      options.observeDuration(durationMs);
      options.log.info(
        {
          generation: input.generation,
          trigger: input.trigger,
          servers: model.servers.length,
          problems: problems.length,
          ms: Math.round(durationMs),
          phases,
        },
        'sync done',
      );
      return {
        awaitingVerdict: quarantine.awaitingVerdict,
        serve: {
          config: text,
          files: model.certificates,
          tables: dynamic && (sharing?.table ? { ...dynamic.tables, ingress: sharing.table } : dynamic.tables),
          trigger: input.trigger,
        },
        secretsRead: { keys: read.keys, namespaces: read.namespaces },
        secretsChanged,
        done: {
          model,
          problems,
          served,
          gatewayStatus: result.gateway?.status ?? null,
        },
        memory,
      };
    }),
  };
}

const NO_UPSTREAMS: NginxModel['upstreams'] = Object.freeze([]);

/**
 * asNginxConfNamesIt is the model as nginx.conf is made from it: with the Lua balancer nginx.conf names no upstream
 * (the balancer reads the pushed backends), so an upstream coming or going is not a reason to format the whole
 * file again (at 10,000 Ingresses, ~40 ms of every such change) only to find the same text.
 */
function asNginxConfNamesIt(model: NginxModel): NginxModel {
  return model.lua === null || model.upstreams.length === 0 ? model : { ...model, upstreams: NO_UPSTREAMS };
}

/** withHeldRoutes leaves the held routes' entries out of the pushed routes, their status saying why. */
function withHeldRoutes(result: BuildResult, held: TableQuarantine): BuildResult {
  const gateway = result.model.gateway;
  if (!gateway) return result;
  const { table, status } = held.routes(gateway.routes, result.gateway?.status ?? null);
  if (table === gateway.routes) return result;
  return {
    ...result,
    model: { ...result.model, gateway: { ...gateway, routes: table } },
    gateway: result.gateway && status ? { ...result.gateway, status } : result.gateway,
  };
}
