import { rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { ConfigFile, NginxConfigSet } from '../../machines/events.js';
import { testConfig } from './binary.js';
import { ownFilesIn, writeCertificates, writeFileAtomic } from './files.js';
import { removeOwnFile } from './private-files.js';

/** ApplyResult says whether a config is now the live nginx.conf, with nginx's words when not. */
export type ApplyResult =
  | { readonly ok: true; readonly conf: string; readonly timings: StageTimings }
  | { readonly ok: false; readonly error: string };

/** ConfigRefusedError is a reload's failure because `nginx -t` refused the config; `output` is nginx's words. */
export class ConfigRefusedError extends Error {
  constructor(readonly output: string) {
    super(`nginx -t refused the new config, the old one stays:\n${output}`);
    this.name = 'ConfigRefusedError';
  }
}

/** StageTimings are how long staging took, for the reload log: writing the files, and `nginx -t`. */
export interface StageTimings {
  readonly writeMs: number;
  readonly testMs: number;
}

const names = (files: readonly ConfigFile[]) => files.map((f) => f.file);

/**
 * ConfigFolder is the one writer of a config folder at runtime (the nginx actor's; boot's check
 * uses the same one before it starts). It writes the Secret-derived files a config names and the
 * config beside the live one, has `nginx -t` judge it there, renames it over nginx.conf, and
 * removes the files no config nginx may still load names. Because it wrote every file and every
 * nginx.conf itself, it knows which files the live nginx.conf names without reading it back.
 * One operation at a time: a reload cut short by a crash may still be running when the next starts.
 */
export class ConfigFolder {
  /** file → text this folder wrote (relative to `dir`), so an unchanged file is not written again */
  private readonly written = new Map<string, string>();
  /** the files the live nginx.conf names; null until this folder made one live (then it removes nothing) */
  private live: ReadonlySet<string> | null = null;
  private turn: Promise<unknown> = Promise.resolve();

  constructor(
    readonly binary: string,
    readonly dir: string,
  ) {}

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work, work);
    this.turn = run.catch(() => undefined);
    return run;
  }

  /**
   * stage makes `set.config` the live nginx.conf only if `nginx -t` accepts it: the folders are
   * checked and the files written first (see prepareConfigDir, ConfigLayout), the config beside
   * the live one, tested there, then renamed over it. A config nginx refuses never replaces the live one.
   * Once `signal` aborts (the reload was abandoned: its master crashed, the actor stopped), the
   * stage writes nothing more, kills its `nginx -t` and swaps nothing in, so the next stage, which
   * waits for this one, starts at once and nothing writes into the folder after its owner stopped.
   */
  stage(set: NginxConfigSet, signal?: AbortSignal): Promise<ApplyResult> {
    const abandoned = { ok: false, error: 'the reload was abandoned' } as const;
    return this.inTurn(async () => {
      if (signal?.aborted) return abandoned;
      const started = performance.now();
      await writeCertificates(this.dir, set.files, this.written);
      const live = join(this.dir, 'nginx.conf');
      const next = join(this.dir, 'nginx.conf.next');
      if (signal?.aborted) return abandoned;
      await writeFileAtomic(next, set.config);
      const written = performance.now();
      const verdict = await testConfig(this.binary, this.dir, next, signal);
      const tested = performance.now();
      if (signal?.aborted) {
        await unlink(next).catch(() => undefined);
        return abandoned;
      }
      if (!verdict.ok) {
        await unlink(next).catch(() => undefined);
        return { ok: false, error: verdict.output };
      }
      await rename(next, live);
      this.live = new Set(names(set.files));
      return {
        ok: true,
        conf: live,
        timings: { writeMs: written - started + (performance.now() - tested), testMs: tested - written },
      };
    });
  }

  /**
   * idle resolves once every operation begun so far has ended (an owner that stopped waits for it before it removes the
   * folder).
   */
  idle(): Promise<void> {
    return this.turn.then(() => undefined);
  }

  /**
   * sweep removes the Secret-derived files (this folder's, and any named as the controller names
   * them in certificates/ and auth/) that neither the live nginx.conf (what a restarted master
   * loads) nor `serving` (what the running master loaded, when its reload did not take) names,
   * and returns them, sorted. Only regular files go, in folders prepareConfigDir checked; a
   * failure to delete is left for the next sweep. Nothing goes before a config was made live here.
   */
  sweep(serving: readonly ConfigFile[] = []): Promise<string[]> {
    return this.inTurn(async () => {
      if (this.live === null) return [];
      const keep = new Set([...this.live, ...names(serving)]);
      const candidates = new Set([...this.written.keys(), ...(await ownFilesIn(this.dir))]);
      const removed: string[] = [];
      for (const file of candidates) {
        if (keep.has(file)) continue;
        // Forget it first: a later config naming the same file with the same text must write it again.
        this.written.delete(file);
        if (await removeOwnFile(join(this.dir, file))) removed.push(file);
      }
      return removed.sort();
    });
  }
}

/** stageConfig is ConfigFolder.stage for a one-off caller (a test, a tool): it removes nothing. */
export function stageConfig(
  binary: string,
  dir: string,
  text: string,
  files: readonly ConfigFile[],
): Promise<ApplyResult> {
  return new ConfigFolder(binary, dir).stage({ config: text, files });
}
