/**
 * The world of the root supervisor: the whole controller as src/main.ts wires it
 * (startController: watchers on the test API server, template, sync queue, nginx, status, http),
 * with real nginx. Real actions: `stop` (what SIGTERM does), the template file, `nginx.stop`,
 * `status.stop` and `watcher.stop` sent to the real children, requests in flight.
 *
 * booting begins with the boot check (bootConfig: a config from an empty cluster, `nginx -t`),
 * held at the stand-in's `nginx -t` gate until the path's next step: released it passes
 * (`done.actor.bootConfig`), or nginx refuses it for real (`error.actor.bootConfig`: the path
 * starts the controller with a template whose text nginx does not know); a `stop` meanwhile
 * ends it with exit 0, and kills the held `nginx -t`.
 *
 * After the check, booting is held for as long as a path needs it: the template the machine loads first is a
 * FIFO that gives its text only when the path says so, and nginx is held before it starts (the
 * stand-in binary); that is also how a broken template reaches the first load. A template
 * restarted onto a broken file is held the same way: its load fails (and the root stops nginx)
 * only once the path's next step is ready for it.
 *
 * The real effects turn every failure into an event their machine handles, so nothing a test can
 * do crashes a child: crashes are injected (INJECTED below) by sending the child an error event
 * it has no handler for, which fails it exactly as an unhandled effect error would.
 */
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { cp, link, mkdtemp, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { expect } from 'vitest';
import type { AnyActorRef, AnyEventObject, AnyMachineSnapshot } from 'xstate';
import type { RootSupervisorContext, RootSupervisorInput } from '../../../machines/rootSupervisor.machine.js';
import { parseControllerFlags } from '../../../src/cli/controller-flags.js';
import type { ControllerConfig } from '../../../src/config.js';
import { WATCHED_KINDS } from '../../../src/kube/kinds.js';
import { startController, type Controller } from '../../../src/main.js';
import { liveGroupMembers, signalGroup } from '../../../src/nginx/master.js';
import { isListening } from '../../../src/nginx/probe.js';
import { PROJECT_ROOT } from '../../../src/project-root.js';
import { waitFor } from '../../support/cluster.js';
import { get } from '../../support/net.js';
import { testControllerFlags } from '../../support/controller-flags.js';
import type { Path } from '../graph.js';
import { microstepRecorder, type RealStep, type StepContext, type World } from '../runner.js';
import { gatedNginx, holdRequest, type HoldingBackend, type InFlight } from './processes.js';

/** HOST is the Ingress host the seed routes to the holding backend. */
export const HOST = 'root.example.com';

const FLAGS = { restartIntensity: 1, restartPeriodS: 4, shutdownTimeoutS: 1 };

/**
 * ROOT_INPUT is the input startController gives the root for these flags (src/main.ts builds it
 * inline); the first step of every path compares it with the real root's context.
 */
export const ROOT_INPUT: RootSupervisorInput = {
  watchers: [...WATCHED_KINDS],
  restartIntensity: FLAGS.restartIntensity,
  restartPeriodMs: FLAGS.restartPeriodS * 1000,
  shutdownTimeoutMs: FLAGS.shutdownTimeoutS * 1000 + 5000,
  syncQueue: { debounceMs: 100, maxHoldoffMs: 500, minSyncIntervalMs: 100 },
  nginx: {
    shutdownTimeoutMs: FLAGS.shutdownTimeoutS * 1000,
    drainTimeoutMs: 1000,
    backoffBaseMs: 100,
    backoffMaxMs: 2000,
    stableAfterMs: 1000,
  },
  watcherOptions: { baseBackoffMs: 500, maxBackoffMs: 30_000 },
  status: {
    leaseDurationMs: 30_000,
    renewDeadlineMs: 20_000,
    retryPeriodMs: 5_000,
    updateStatus: true,
    updateStatusOnShutdown: true,
    resyncPeriodMs: 60_000,
    stopTimeoutMs: 1000,
  },
  http: true,
};

/** R are the model's events, as the root receives them. */
export const R = {
  stop: { type: 'stop' },
  ready: { type: 'xstate.snapshot.template', snapshot: { value: 'ready' } },
  templateFailed: { type: 'xstate.done.actor.template', output: { error: 'template failed' } },
  nginxDone: (clean: boolean) => ({ type: 'xstate.done.actor.nginx', output: { clean } }),
  statusDone: { type: 'xstate.done.actor.status', output: { wasLeader: true, cleared: true, released: true } },
  httpDone: { type: 'xstate.done.actor.http' },
  crash: (id: string) => ({ type: `xstate.error.actor.${id}`, error: 'injected crash' }),
  watcherDone: (kind: string) => ({ type: `xstate.done.actor.watcher.${kind}` }),
  expired: { type: 'restart.expired' },
  timeout: { type: 'xstate.after.shutdownTimeout.rootSupervisor.stopping' },
  bootDone: { type: 'xstate.done.actor.bootConfig', output: undefined },
  bootFailed: { type: 'xstate.error.actor.bootConfig', error: 'nginx -t refused the initial config' },
};

/** INJECTED are the root's transitions only an injected fault reaches, and why no real action can. */
export const INJECTED: Readonly<Record<string, string>> = {
  'error.actor.* (a child crashes)':
    'every effect failure is an event its machine handles; a crash is an error event sent to the child',
  'done.actor.http': 'the http actor only ends when it is stopped; its done event is sent to the root',
  'after.shutdownTimeout':
    'nginx and status always finish within their own, shorter timeouts; the nginx actor is stopped unseen first',
};

/** rootEvents lists what the world can make happen in a root state. */
export function rootEvents(s: AnyMachineSnapshot): AnyEventObject[] {
  const c = s.context as RootSupervisorContext;
  const common = [R.stop, R.statusDone, R.httpDone, R.watcherDone('Ingress'), R.expired];
  // Before the boot check ended no child runs: only the check's verdict or a stop can come.
  if (s.matches('booting' as never) && !c.booted) return [R.bootDone, R.bootFailed, R.stop];
  if (s.matches('booting' as never))
    return [R.ready, ...common, R.templateFailed, R.nginxDone(false), R.crash('watcher.Ingress')];
  if (s.matches('running' as never))
    return [
      ...common,
      R.crash('nginx'),
      R.crash('syncQueue'),
      R.crash('template'),
      R.templateFailed,
      R.nginxDone(true),
    ];
  // nginx is held (a request in flight, or not started yet) until status has stopped.
  if (s.matches('stopping' as never)) {
    if (!c.statusStopped) return [R.statusDone];
    return [
      ...(c.nginxClean === null ? [R.nginxDone(true), R.nginxDone(false), R.crash('nginx'), R.timeout] : []),
      R.crash('template'),
      R.expired,
    ];
  }
  return [];
}

/** rootKey is the part of the root's snapshot that decides what happens next. */
export function rootKey(s: AnyMachineSnapshot): unknown {
  const c = s.context as RootSupervisorContext;
  return [s.value, c.booted, c.recentRestarts, c.failure === null, c.nginxClean, c.statusStopped];
}

const served = (path: Path, before: number) =>
  path.steps.slice(0, before).some((step) => step.event.type === R.ready.type);

/** rootFeasible drops paths the world cannot walk, each rule with its reason. */
export function rootFeasible(path: Path): boolean {
  return path.steps.every((step, i) => {
    // A running template never fails; only one restarted onto a broken file does.
    if (step.event.type === R.templateFailed.type && path.steps[i - 1]!.state.matches('running' as never))
      return path.steps[i - 1]!.event.type === R.crash('template').type;
    // nginx quits cleanly once it served; held before its start, it is killed after its timeout.
    if (step.event.type === R.nginxDone(true).type)
      return (step.event as unknown as { output: { clean: boolean } }).output.clean === served(path, i);
    return true;
  });
}

const BROKEN = '{{#each config.nope}}\n';
/** A line the template renders and nginx -t refuses: `[emerg] unknown directive`. */
const UNKNOWN_TO_NGINX = '\nmodel_test_unknown_directive on;\n';

/** startControllerWorld prepares the world of one path; the init step starts the controller. */
export async function startControllerWorld(
  kubeconfig: string,
  backend: HoldingBackend,
  serial: number,
): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-model-root-'));
  const templates = join(dir, 'templates');
  await cp(join(PROJECT_ROOT, 'templates'), templates, { recursive: true });
  const template = join(templates, 'nginx.conf.hbs');
  const fifo = join(dir, 'template.fifo');
  const gates = await gatedNginx(dir, ['hold-test', 'hold-start', 'ignore-quit']);
  const { flags, httpPort, healthzPort } = await testControllerFlags(kubeconfig, join(dir, 'conf'));
  const parsed = parseControllerFlags([
    ...flags,
    '--template',
    template,
    '--nginx-binary',
    gates.binary,
    '--sync-rate-limit',
    '10',
    '--drain-timeout',
    '1',
    '--shutdown-timeout',
    String(FLAGS.shutdownTimeoutS),
    '--restart-intensity',
    String(FLAGS.restartIntensity),
    '--restart-period',
    String(FLAGS.restartPeriodS),
    '--election-id',
    `model-${serial}`,
    // The stand-in binary holds every `nginx -t`, the Lua check's too: this world is the supervisor's.
    '--dynamic-backends=false',
    // The supervision is the same for any number of watchers: the seven of ROOT_INPUT, not the Gateway API's too.
    '--enable-gateway-api=false',
  ]);
  if (!('config' in parsed)) throw new Error('unexpected --help');
  const config: ControllerConfig = parsed.config;
  const log: RealStep[] = [];
  const record = microstepRecorder(log);
  let initial: AnyMachineSnapshot | undefined;
  let controller: Controller | undefined;
  let inFlight: InFlight | null = null;
  const groups = new Set<number>();
  let crashedMaster: number | null = null;

  const child = (id: string) => controller?.root.system.get(id) as AnyActorRef | undefined;
  const rememberMaster = () => {
    const pid = (child('nginx')?.getSnapshot() as { context?: { pid?: number | null } } | undefined)?.context?.pid;
    if (pid) groups.add(pid);
  };
  const serves = async () =>
    (await get({ host: HOST, path: '/', port: httpPort }).catch(() => null))?.body.trim() === 'backend';
  const healthz = async () => (await get({ host: 'x', path: '/healthz', port: healthzPort }).catch(() => null))?.status;
  // A held load waits in open(2) on the FIFO; a writer releases every waiting reader. The path
  // is pointed at a regular file with the same text first, so a reload that the write itself
  // triggers (chokidar sees the FIFO change) reads the same text instead of waiting again.
  const releaseLoad = async (text: string, patienceMs = 5000) => {
    await writeFile(`${template}.next`, text);
    await rename(`${template}.next`, template);
    const deadline = Date.now() + patienceMs;
    let released = false;
    while (Date.now() < deadline) {
      const handle = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).catch(() => null);
      if (handle) {
        await handle.write(text).catch(() => undefined);
        await handle.close();
        released = true;
      } else if (released) return; // ENXIO: no reader left
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  // Points the template path at the FIFO again (atomically: a watcher never sees it missing), so
  // the next load waits until releaseLoad.
  const holdNextLoad = async () => {
    await link(fifo, `${template}.held`);
    await rename(`${template}.held`, template);
  };
  /**
   * crash fails a child as a bug would. A watcher or the template fails the way an effect of
   * theirs that throws would (an error event they have no handler for); the sync queue and
   * nginx handle every effect error, so they fail as a bug in a guard or action does: an event
   * whose field throws when the machine reads it (non-enumerable, so logs and inspection skip it).
   */
  const crash = (id: string) => {
    const bug = (type: string, field: string) =>
      Object.defineProperty({ type }, field, {
        enumerable: false,
        get: () => {
          throw new Error(`${id} crashed (injected)`);
        },
      });
    if (id === 'nginx') return child(id)?.send(bug('nginx.reload', 'config'));
    if (id === 'syncQueue') return child(id)?.send(bug('k8s.synced', 'kind'));
    child(id)?.send({ type: 'xstate.error.actor.injected', error: new Error(`${id} crashed (injected)`) });
  };

  return {
    log,
    ambient: new Set(),
    snapshot: () => controller?.root.getSnapshot() as AnyMachineSnapshot | undefined,
    initial: () => initial!,
    project: (s) => {
      const c = s.context as RootSupervisorContext;
      return {
        watchers: c.watchers,
        intensity: c.restartIntensity,
        period: c.restartPeriodMs,
        shutdown: c.shutdownTimeoutMs,
        http: c.http,
        status: !!c.status,
        booted: c.booted,
        recent: c.recentRestarts,
        restarts: c.restarts,
        failure: c.failure?.split(':')[0] ?? null,
        nginxClean: c.nginxClean,
        statusStopped: c.statusStopped,
      };
    },

    async exec(at: StepContext) {
      const e = at.step.event;
      const from = at.previous?.state;
      if (e.type === 'xstate.init') {
        const refused = at.next?.event.type === R.bootFailed.type;
        if (refused) await writeFile(template, (await readFile(template, 'utf8')) + UNKNOWN_TO_NGINX);
        controller = await startController(config, pino({ level: 'silent' }), { inspect: record });
        // booting with its boot check held at `nginx -t`: no transition yet.
        initial = controller.root.getSnapshot() as AnyMachineSnapshot;
        await waitFor('the boot nginx -t', async () => (await gates.waiting('test')).length === 1, 10_000);
        if (refused) return;
        // The boot check read the template: swap it for a FIFO the template machine's first load will block on.
        await rename(template, `${template}.good`);
        execFileSync('mkfifo', [fifo]);
        await link(fifo, template);
        return;
      }
      if (e.type === R.bootDone.type || e.type === R.bootFailed.type) {
        // The real nginx -t passes the boot config, or refuses the unknown directive.
        await gates.set('hold-test', false);
        await gates.release('test');
        if (e.type === R.bootFailed.type) return;
        // nginx waits before it runs, ignoring SIGQUIT from then on: a stop now kills it after its timeout.
        await waitFor('nginx held before its start', async () => (await gates.waiting('start')).length === 1, 5000);
        return;
      }
      // Before the root stops nginx, give nginx a request to finish, so status stops first.
      const entersStopping = at.step.state.matches('stopping' as never) && !from?.matches('stopping' as never);
      const rootStopsNginx = e.type !== R.crash('nginx').type && e.type !== R.nginxDone(true).type;
      if (
        entersStopping &&
        rootStopsNginx &&
        served(at.path, at.index) &&
        (from!.context as RootSupervisorContext).nginxClean === null
      ) {
        await waitFor('the app served', serves, 5000);
        inFlight = await holdRequest(httpPort, backend, HOST);
      }
      // Looking ahead: a stopping that ends by the root's own timeout had an nginx actor that vanished.
      const nginxVanishes =
        entersStopping &&
        at.path.steps.slice(at.index + 1).find((s) => !s.state.matches('stopping' as never))?.event.type ===
          R.timeout.type;
      rememberMaster();
      if (e.type === R.ready.type) {
        await gates.set('ignore-quit', false);
        await gates.set('hold-start', false);
        await gates.release('start');
        await releaseLoad(await readFile(`${template}.good`, 'utf8'));
      } else if (e.type === R.templateFailed.type) {
        // The load held at boot, or the restarted template's (see below), now reads the broken file.
        await releaseLoad(BROKEN);
      } else if (e.type === R.stop.type) {
        controller!.stop();
      } else if (e.type === R.nginxDone(true).type) {
        if (from?.matches('stopping' as never)) backend.release();
        else child('nginx')?.send({ type: 'nginx.stop' });
      } else if (e.type === R.statusDone.type && !from?.matches('stopping' as never)) {
        child('status')?.send({ type: 'status.stop' });
      } else if (e.type === R.httpDone.type) {
        controller!.root.send({ type: 'xstate.done.actor.http', output: undefined } as never); // INJECTED
      } else if (e.type === R.watcherDone('Ingress').type) {
        child('watcher.Ingress')?.send({ type: 'watcher.stop' });
      } else if (e.type.startsWith('xstate.error.actor.')) {
        const id = e.type.slice('xstate.error.actor.'.length);
        // The restarted template loads at once, and a broken file makes the root stop nginx at
        // once: before the next step held the request that keeps nginx up until status stopped
        // (under load that request came too late: ECONNREFUSED). So the restart's load waits on
        // the FIFO until the next step gives it the broken file.
        if (id === 'template' && at.next?.event.type === R.templateFailed.type) await holdNextLoad();
        if (id === 'nginx')
          crashedMaster = (child('nginx')!.getSnapshot() as { context: { pid: number | null } }).context.pid;
        crash(id); // INJECTED
      }
      if (nginxVanishes) {
        // Once the root told it `nginx.stop` (before, that event went to a stopped actor, and xstate
        // warned), nginx is stopped as its parent would stop it, so the root is not told
        // (xstate.stop is what stopChild sends). nginx takes its shutdown timeout (1 s) to stop by itself.
        await waitFor(
          'the root stopping',
          async () => controller!.root.getSnapshot().matches('stopping' as never),
          5000,
          1,
        );
        child('nginx')?.send({ type: 'xstate.stop' });
      }
      // Timers (restart.expired, after …) and the children's own stops need no action.
    },

    async check({ step, previous, next }, current) {
      const s = step.state;
      rememberMaster();
      if (s.matches('booting' as never) && current && !(s.context as RootSupervisorContext).booted) {
        expect(child('template')).toBeUndefined(); // no child before the boot check passed
        expect(await gates.waiting('test')).toHaveLength(1);
        // The bound --healthz-port says it is starting until the http actor takes it.
        expect(await healthz()).toBe(500);
      } else if (s.matches('booting' as never) && current) {
        expect(child('template')?.getSnapshot().value).toBe('loading'); // held by the FIFO
        expect(await healthz()).not.toBe(200);
      } else if (s.matches('running' as never) && current) {
        // the restart's load, held by the FIFO
        if (next?.event.type === R.templateFailed.type) expect(child('template')?.getSnapshot().value).toBe('loading');
        await waitFor('the app served through nginx', serves, 20_000);
        await waitFor('/healthz to answer 200', async () => (await healthz()) === 200, 20_000);
        if (previous?.event.type === R.crash('nginx').type && crashedMaster !== null) {
          expect(liveGroupMembers(crashedMaster)).toEqual([]); // the failed machine's nginx was killed
        }
      } else if (s.matches('stopping' as never) && current) {
        expect(child('watcher.Ingress')).toBeUndefined();
        expect(child('syncQueue')?.getSnapshot().status ?? 'done').toBe('done');
      } else if (s.matches('stopped' as never)) {
        const code = await controller!.exitCode;
        expect(code).toBe((s.output as { exitCode: number }).exitCode);
        if (step.event.type === R.bootFailed.type) {
          expect(await controller!.reason).toMatch(
            /^boot: nginx -t refused the initial config:\n.*unknown directive "model_test_unknown_directive"/,
          );
        }
        // A stop during the boot check killed its nginx -t; none is left waiting.
        await waitFor('no nginx -t left', async () => (await gates.waiting('test')).length === 0, 3000);
        expect(await isListening(healthzPort)).toBe(false);
        if (step.event.type !== R.timeout.type) {
          await waitFor(
            'no nginx process left',
            () => [...groups].every((pid) => liveGroupMembers(pid).length === 0),
            3000,
          );
          expect(await isListening(httpPort)).toBe(false);
        }
        if (inFlight) await inFlight.done;
      }
    },

    async close() {
      if (controller?.root.getSnapshot().status === 'active') controller.stop();
      backend.release();
      await releaseLoad('', 50); // frees a load still blocked on the FIFO
      await Promise.race([controller?.exitCode, new Promise((r) => setTimeout(r, 10_000))]);
      rememberMaster();
      for (const pid of groups) signalGroup(pid, 'SIGKILL');
      for (const pid of await gates.waiting('start').catch(() => [])) signalGroup(pid, 'SIGKILL');
      for (const pid of await gates.waiting('test').catch(() => [])) process.kill(pid, 'SIGKILL');
      await inFlight?.done;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
