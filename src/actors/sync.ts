import { fromPromise } from 'xstate';
import type { RunSyncInput, RunSyncOutput } from '../../machines/syncQueue.machine.js';
import { formatProblem } from '../model/problems.js';
import type { Logger } from '../log.js';
import type { ClusterCache } from '../kube/cache.js';
import { BuildMemo, buildModel, type BuildOptions } from '../model/build.js';
import type { NginxModel, Problem } from '../model/nginx-model.js';
import { Quarantine } from '../model/quarantine.js';
import { blame } from '../render/blame.js';
import { writeCertificates } from '../nginx/files.js';
import { render, type NginxTemplate } from '../render/render.js';

/** SyncOptions are what a sync needs besides the actors it talks to. */
export interface SyncOptions {
  readonly cache: ClusterCache;
  readonly build: BuildOptions;
  readonly configDir: string;
  readonly log: Logger;
  /** the model and problems of the last sync (the template actor test-renders the model; the status actor publishes both) */
  readonly onModel: (model: NginxModel, durationMs: number, problems: readonly Problem[]) => void;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

/**
 * syncActors implements the sync queue's `runSync`: snapshot the caches, build the model,
 * render it with the template actor's current template, write the certificates (0600, before
 * any config names them) and hand the text to the nginx actor, which skips identical text.
 * Problems are logged when they appear, not again on every sync.
 */
export function syncActors(options: SyncOptions) {
  let reported = new Set<string>();
  // Lends each build what the previous one worked out, so one changed Ingress costs little.
  const memo = new BuildMemo();
  const written = new Map<string, string>();
  // What nginx refused costs only the Ingresses it points at.
  const quarantine = new Quarantine((output, handed) => blame(output, handed.text, handed.model));
  return {
    runSync: fromPromise<RunSyncOutput, RunSyncInput>(async ({ input, system }) => {
      const started = performance.now();
      const template = system.get('template')?.getSnapshot().context.current as NginxTemplate | undefined;
      if (!template?.run) throw new Error('no good template loaded yet');
      const heldBefore = quarantine.heldKeys().join(' ');
      quarantine.judge({ applied: input.applied, refused: input.refused });
      if (input.refused && quarantine.unblamed !== null) {
        options.log.error({ reason: quarantine.unblamed }, 'nginx refused the config, and no Ingress is to blame (the ConfigMap or the template?); the last good config stays');
        quarantine.unblamed = null;
      }
      const { snapshot, problems: leftOut } = quarantine.prepare(options.cache.snapshot());
      if (quarantine.heldKeys().join(' ') !== heldBefore || quarantine.awaitingVerdict) {
        options.log.warn({ held: quarantine.heldKeys(), awaitingVerdict: quarantine.awaitingVerdict }, 'Ingresses nginx refused are left out');
      }
      const snapshotted = performance.now();
      const result = buildModel(snapshot, options.build, memo);
      const { model } = result;
      const problems = leftOut.length > 0 ? [...result.problems, ...leftOut] : result.problems;
      const built = performance.now();
      const text = render(model, template);
      const rendered = performance.now();
      await writeCertificates(options.configDir, model.certificates, written);
      const phases = {
        snapshot_ms: round(snapshotted - started),
        build_ms: round(built - snapshotted),
        render_ms: round(rendered - built),
        write_ms: round(performance.now() - rendered),
      };
      const now = new Set(problems.map(formatProblem));
      for (const line of now) if (!reported.has(line)) options.log.warn({ problem: line }, 'left out of nginx.conf');
      reported = now;
      const nginx = system.get('nginx');
      if (!nginx) throw new Error('the nginx actor is not running');
      quarantine.handedOver({ text, model, ingresses: snapshot.ingresses, secrets: snapshot.secrets });
      nginx.send({ type: 'nginx.reload', config: text });
      const durationMs = performance.now() - started;
      options.onModel(model, durationMs, problems);
      options.log.info({ generation: input.generation, servers: model.servers.length, problems: problems.length, ms: Math.round(durationMs), phases }, 'sync done');
      return { awaitingVerdict: quarantine.awaitingVerdict };
    }),
  };
}
