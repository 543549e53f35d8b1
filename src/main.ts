/**
 * The one wiring module: the statecharts in machines/ get their effects from src/actors here,
 * and nowhere else. Everything below is plumbing; the behaviour lives in the machines.
 */
import type { Server } from 'node:http';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  NetworkingV1Api,
} from '@kubernetes/client-node';
import { createActor, enqueueActions, fromPromise, type Actor, type InspectionEvent } from 'xstate';
import { nginxProcessMachine } from '../machines/nginxProcess.machine.js';
import { selectExit } from '../machines/selectors/rootSupervisor.js';
import { resourceWatcherMachine } from '../machines/resourceWatcher.machine.js';
import {
  childIds,
  rootSupervisorMachine,
  type RootSupervisorInput,
  type RootSupervisorOutput,
} from '../machines/rootSupervisor.machine.js';
import { statusMachine } from '../machines/status.machine.js';
import { syncQueueMachine } from '../machines/syncQueue.machine.js';
import { templateMachine } from '../machines/template.machine.js';
import { nginxActors } from './actors/nginx.js';
import { statusActors } from './actors/status.js';
import { syncActors } from './sync/run.js';
import { tellSyncQueue } from './actors/tell.js';
import { templateActors } from './actors/template.js';
import { watcherActors, watcherLogActions } from './actors/watcher.js';
import type { ControllerConfig } from './config.js';
import { ControllerMetrics } from './http/metrics.js';
import { observeSystem, ROOT_SYSTEM_ID } from './http/observed.js';
import type { ReviewObservation } from './http/admission-metrics.js';
import { bucketsEnv, METRIC_BUCKETS_ENV, RequestMetrics } from './http/request-metrics.js';
import { httpActor, listenHealthz } from './http/server.js';
import { SpanExport } from './http/spans.js';
import { startWebhook } from './http/webhook-listen.js';
import { startSelfSignedWebhook, type WebhookCertTimings } from './http/webhook-self-signed.js';
import { ClusterCache } from './kube/cache.js';
import { kubeConfigFromEnv } from './kube/kubeconfig.js';
import type { InformerTimeouts } from './kube/informer.js';
import { EventRecorder } from './kube/events.js';
import { watchedKinds } from './kube/kinds.js';
import { defaultIdentity, electionTimings, LeaseElector } from './kube/leader.js';
import { podInfoFromEnv, StatusWriter, type PodInfo } from './kube/status.js';
import { GatewayStatusWriter } from './kube/gateway-status.js';
import { gatewayAddresses } from './model/gateway/status-merge.js';
import type { Logger } from './log.js';
import { buildModel } from './model/build.js';
import type { BuildOptions } from './model/build-types.js';
import { emptySnapshot } from './model/snapshot.js';
import { ConfigFolder, ConfigRefusedError } from './nginx/apply.js';
import { nginxBinary } from './nginx/binary.js';
import { ControlChannel, newControlToken } from './nginx/control.js';
import { checkLua } from './nginx/lua.js';
import { checkStream, streamSockets } from './nginx/stream.js';
import { statusSocketIn } from './nginx/stub-status.js';
import { openAuditPipe } from './nginx/waf-audit-pipe.js';
import { UsageError } from './usage-error.js';
import { releaseVersion } from './version.js';
import type { LuaSettings, StreamSettings } from './model/machine-settings.js';
import type { NginxModel } from './model/nginx-model.js';
import { findModules } from './nginx/modules.js';
import { CONTROL_TOKEN_ENV } from './nginx/control.js';
import { ensureConfigDir } from './nginx/files.js';
import { nameservers } from './nginx/resolvers.js';
import { loadCheckedTemplate } from './render/load.js';
import { render } from './render/render.js';

/** Controller is a started controller: its root actor and the exit code it will end with. */
export interface Controller {
  readonly root: Actor<typeof rootSupervisorMachine>;
  readonly cache: ClusterCache;
  /** the Prometheus registry behind /metrics */
  readonly metrics: ControllerMetrics;
  /** the request metrics nginx counts, or null (rendered mode, --enable-metrics=false) */
  readonly requestMetrics: RequestMetrics | null;
  /** the spans nginx makes (enable-opentelemetry), drained and exported; null without the Lua balancer */
  readonly spans: SpanExport | null;
  /** what every sync builds the model with: the flags' options plus what the start found (Lua, modules, sockets) */
  readonly build: BuildOptions;
  /** this replica's identity in the leader Lease (POD_NAME, or host name and a random suffix) */
  readonly identity: string;
  readonly exitCode: Promise<0 | 1>;
  /** why it exits 1 (null when 0), once it stopped: for the operator, in one line or a few */
  readonly reason: Promise<string | null>;
  /** what `stop` (SIGTERM) does: an orderly shutdown */
  stop(): void;
}

/**
 * luaBalancer decides, once at start, whether backends and certificates go to nginx's Lua balancer (said
 * once in the log either way it falls back).
 */
async function luaBalancer(binary: string, config: ControllerConfig, log: Logger) {
  if (!config.dynamicBackends) {
    log.info(
      '--dynamic-backends=false: backends are rendered into nginx.conf, and every endpoint change reloads nginx',
    );
    return undefined;
  }
  // nginx missing or broken is boot's to report, with its own clear message.
  const check = await checkLua(binary, config.configDir).catch(
    (error: Error) => ({ ok: false, why: error.message }) as const,
  );
  if (check.ok) return check.settings;
  log.warn(
    { reason: check.why },
    'the Lua balancer cannot run with this nginx: backends are rendered into nginx.conf, and every endpoint change ' +
      'reloads nginx',
  );
  return undefined;
}

/**
 * streamModule finds nginx's stream module when a flag needs the stream block (TCP or UDP services, ssl-passthrough);
 * without it those flags cannot work, and the controller says so at once.
 */
async function streamModule(binary: string, config: ControllerConfig): Promise<StreamSettings | undefined> {
  const { tcpServicesConfigMap, udpServicesConfigMap, enableSslPassthrough } = config.build;
  if (!tcpServicesConfigMap && !udpServicesConfigMap && !enableSslPassthrough) {
    // TLS, TCP and UDP listeners of Gateways are served by it too, when this nginx has it
    if (!config.build.gateway) return undefined;
    const check = await checkStream(binary, config.configDir);
    return check.ok ? check.settings : undefined;
  }
  const check = await checkStream(binary, config.configDir);
  if (!check.ok)
    throw new UsageError(
      `--tcp-services-configmap, --udp-services-configmap and --enable-ssl-passthrough need nginx's stream module: ` +
        check.why,
    );
  return check.settings;
}

/** ControllerOptions are what the CLI and the tests add to the flags. */
export interface ControllerOptions {
  inspect?: (event: InspectionEvent) => void;
  kubeConfig?: KubeConfig;
  env?: NodeJS.ProcessEnv;
  watcherTimeouts?: Partial<InformerTimeouts>;
  /** how often a watcher lists a kind the API server does not serve again (30 s; tests shorten it) */
  unservedRecheckMs?: number;
  /** nginx's stdout, where the access log goes: 'inherit' for the CLI (src/nginx/stdout.ts); /dev/null when absent */
  nginxStdout?: 'inherit' | 'ignore';
  /** the self-made webhook certificate's rechecks, retries and renewal window (tests shorten them) */
  webhookCertTimings?: Partial<WebhookCertTimings>;
}

/**
 * startController boots the actor system. The root supervisor's `booting` first runs
 * `bootConfig`: nginx.conf written from an empty cluster (default server only) and checked with
 * `nginx -t`, so nginx can start at once and serve 404s while the watchers list (the first sync
 * then reloads it); only then are the children started. Its failure (nginx missing, the
 * template broken) ends the controller with exit 1 and the reason.
 *
 * The steps, in order: what this nginx can do, the options every sync builds with, the metrics, the listeners
 * (bound before any actor runs, so a port in use stops the start), each machine provided with its effects, and
 * the root supervisor run until it stops.
 */
export async function startController(
  config: ControllerConfig,
  log: Logger,
  options: ControllerOptions = {},
): Promise<Controller> {
  const startedAt = Date.now();
  // For the status page; read before any port is bound, so that nothing is left open if it fails.
  const version = await releaseVersion();
  const binary = nginxBinary(config.nginxBinary ?? undefined);
  const env = options.env ?? process.env;
  const kc = options.kubeConfig ?? kubeConfigFromEnv(config.kubeconfig, log, env);
  const cache = new ClusterCache();
  // A refused folder throws UnsafePathError: the CLI prints it as one line, exit 2.
  await ensureConfigDir(config.configDir);
  const found = await findNginxCapabilities(binary, config, log);
  // ModSecurity's audit log, read from a FIFO while the module is there (a WAF may be turned on by any sync)
  const audit = found.modules.modsecurity ? await openAuditPipe(config.configDir, log.child({ actor: 'nginx' })) : null;
  // without the FIFO, no audit log: nginx's stderr is a socket here, which `SecAuditLog /dev/stderr` cannot open (nginx
  // would refuse the whole config)
  const build = buildOptions(config, found, found.modules.modsecurity ? (audit?.path ?? '/dev/null') : undefined);
  const control = build.dynamic && controlChannel(build.dynamic, config);
  const pod = podInfoFromEnv(env);
  const identity = defaultIdentity(env);
  const input = supervisorInput(config, options);

  const metrics = new ControllerMetrics({
    controllerNamespace: pod.namespace ?? '',
    controllerClass: config.build.controllerClass,
    controllerPod: pod.name ?? identity,
    electionId: config.status.electionId,
    actorIds: ['root', ...childIds(input)],
    statusSocket: found.statusSocket,
    webhook: config.webhook !== null,
  });
  const requestMetrics = requestMetricsOf(config, control, metrics, log);
  // Spans (enable-opentelemetry) are made by the Lua balancer's phases: only where it runs.
  const spans =
    control &&
    new SpanExport({
      registry: metrics.registry,
      drain: () => control.channel.drainSpans(),
      log: log.child({ actor: 'spans' }),
      version,
    });
  const listeners = await openListeners(config, options, { kc, cache, build, metrics, log });

  // An empty cluster's model: the boot config, and what a template is test-rendered against until the first sync.
  const bootModel = buildModel(emptySnapshot, build).model;
  // The config folder's one writer: boot's check, then the nginx actor.
  const folder = new ConfigFolder(binary, config.configDir);
  const actors = {
    bootConfig: bootConfigActor(config, folder, bootModel),
    watcher: provideWatcher(config, kc, cache, log),
    template: provideTemplate(config, bootModel, log),
    syncQueue: provideSyncQueue({ cache, build, metrics, log }),
    nginx: provideNginx(config, options, { binary, folder, found, control, log }),
    status: provideStatus(config, { kc, cache, pod, identity, log }),
    http: httpActor({
      port: config.healthzPort,
      ...(config.healthzHost === null ? {} : { host: config.healthzHost }),
      listening: listeners.healthz,
      metrics,
      log: log.child({ actor: 'http' }),
      watchers: input.watchers,
      statusPage: {
        mode: config.statusPage,
        info: {
          version,
          ingressClass: config.build.ingressClass,
          controllerClass: config.build.controllerClass,
          identity,
          startedAt,
        },
        actorIds: childIds(input),
      },
    }),
  };
  const root = createActor(rootSupervisorMachine.provide({ actors }), {
    input,
    systemId: ROOT_SYSTEM_ID,
    // Metrics read the inspection stream; a caller's inspector (--inspect, tests) gets it too.
    inspect: (event) => {
      metrics.observe(event);
      requestMetrics?.observe(event);
      if (spans) spans.observe(event);
      options.inspect?.(event);
    },
  });
  metrics.watch(observeSystem(root.system));
  const { exitCode, reason } = run(root, { log, folder, listeners, requestMetrics, spans: spans || null });
  // after nginx is gone: its workers may write to the FIFO until they exit
  void exitCode.then(() => audit?.close());
  return {
    root,
    cache,
    metrics,
    requestMetrics,
    spans: spans || null,
    build,
    identity,
    exitCode,
    reason,
    stop: () => root.send({ type: 'stop' }),
  };
}

/** NginxCapabilities is what the start found this nginx can do, and where it listens beside its ports. */
interface NginxCapabilities {
  /** the Lua balancer's settings; undefined when backends are rendered into nginx.conf */
  readonly lua: Omit<LuaSettings, 'requestMetrics'> | undefined;
  /** the stream module's settings, when a flag needs the stream block */
  readonly stream: StreamSettings | undefined;
  /** stub_status for /metrics; null when --config-dir is too long for a unix socket (only the /proc figures then) */
  readonly statusSocket: string | null;
  readonly resolvers: string[];
  readonly modules: Awaited<ReturnType<typeof findModules>>;
}

/** findNginxCapabilities asks the nginx binary, once at start, what it can do (Lua, stream, modules). */
async function findNginxCapabilities(
  binary: string,
  config: ControllerConfig,
  log: Logger,
): Promise<NginxCapabilities> {
  const lua = await luaBalancer(binary, config, log);
  const stream = await streamModule(binary, config);
  const statusSocket = statusSocketIn(config.configDir);
  return { lua, stream, statusSocket, resolvers: await nameservers(), modules: await findModules(binary) };
}

/** buildOptions is what every sync builds the model with: the flags' options plus what the start found. */
function buildOptions(config: ControllerConfig, found: NginxCapabilities, wafAuditLog?: string): BuildOptions {
  // Request metrics are counted by the Lua balancer's log phase: none in rendered mode or with --enable-metrics=false.
  const dynamic = found.lua && {
    ...found.lua,
    requestMetrics: config.metrics.enabled,
    routesAsData: config.routesAsData,
  };
  return {
    ...config.build,
    ...(found.statusSocket ? { statusSocket: found.statusSocket } : {}),
    ...(wafAuditLog ? { wafAuditLog } : {}),
    resolvers: found.resolvers,
    modules: found.modules,
    ...(dynamic ? { dynamic } : {}),
    ...(found.stream ? { stream: found.stream } : {}),
  };
}

/** Control is the channel to the Lua balancer, and what the nginx master's environment carries for it. */
interface Control {
  readonly channel: ControlChannel;
  readonly env: Readonly<Record<string, string>>;
  readonly socket: string;
}

/** controlChannel makes the channel to the Lua balancer; its token is made per start and reaches nginx only through its environment. */
function controlChannel(dynamic: LuaSettings, config: ControllerConfig): Control {
  const token = newControlToken();
  return {
    channel: new ControlChannel(dynamic.controlSocket, token),
    env: { [CONTROL_TOKEN_ENV]: token, [METRIC_BUCKETS_ENV]: bucketsEnv(config.metrics.buckets) },
    socket: dynamic.controlSocket,
  };
}

/** supervisorInput is the root supervisor's input: its children, their order, timings and restart budget. */
function supervisorInput(config: ControllerConfig, options: ControllerOptions): RootSupervisorInput {
  return {
    // The Gateway API's kinds only with --enable-gateway-api (their watchers wait `unserved` while no CRD is there).
    watchers: watchedKinds(config.build.gateway !== undefined),
    restartIntensity: config.restartIntensity,
    restartPeriodMs: config.restartPeriodMs,
    shutdownTimeoutMs: config.shutdownTimeoutMs + 5_000,
    syncQueue: {
      debounceMs: 100,
      maxHoldoffMs: 500,
      // Limits reloads: a sync whose config nginx was handed already only pushes its tables, at once.
      minSyncIntervalMs: 1000 / config.syncRateLimit,
    },
    nginx: {
      shutdownTimeoutMs: config.shutdownTimeoutMs,
      drainTimeoutMs: config.drainTimeoutMs,
      // A crash loop is slowed to one start per 2 s at worst, but a master that served for a
      // second is stable: killing it restarts at once (the seed restarts without any delay).
      backoffBaseMs: 100,
      backoffMaxMs: 2_000,
      stableAfterMs: 1_000,
      // A reload that failed for a passing cause (a full disk, nginx -t unable to run) is retried.
      reloadRetryMs: 2_000,
    },
    watcherOptions: {
      baseBackoffMs: 500,
      maxBackoffMs: 30_000,
      ...options.watcherTimeouts,
      ...(options.unservedRecheckMs === undefined ? {} : { unservedRecheckMs: options.unservedRecheckMs }),
    },
    status: {
      ...electionTimings(config.status.electionTtlMs),
      updateStatus: config.status.updateStatus,
      updateStatusOnShutdown: config.status.updateStatusOnShutdown,
      resyncPeriodMs: 60_000,
      stopTimeoutMs: Math.min(10_000, Math.max(1_000, config.shutdownTimeoutMs)),
    },
    http: true,
  };
}

/** requestMetricsOf counts nginx's requests into /metrics, when the Lua balancer runs and --enable-metrics is on. */
function requestMetricsOf(
  config: ControllerConfig,
  control: Control | undefined,
  metrics: ControllerMetrics,
  log: Logger,
): RequestMetrics | null {
  if (!control && config.metrics.enabled)
    log.info('request metrics need the Lua balancer (--dynamic-backends): /metrics has the controller’s own only');
  if (!control || !config.metrics.enabled) return null;
  return new RequestMetrics({
    registry: metrics.registry,
    flags: config.metrics,
    drain: () => control.channel.drainMetrics(),
    log: log.child({ actor: 'metrics' }),
  });
}

/** Listeners are the ports bound before any actor runs: the healthz port, and the admission webhook's. */
interface Listeners {
  readonly healthz: Server;
  readonly webhook: { close(): unknown } | null;
}

/**
 * openListeners binds the --healthz-port (a port in use stops the start here: ListenError, exit 1) and starts the
 * admission webhook, which judges against the cache the watchers fill: bound here too, so a port in use exits 1.
 * With a self-made certificate it binds once the certificate is there, and the rest serves meanwhile.
 */
async function openListeners(
  config: ControllerConfig,
  options: ControllerOptions,
  the: { kc: KubeConfig; cache: ClusterCache; build: BuildOptions; metrics: ControllerMetrics; log: Logger },
): Promise<Listeners> {
  const healthz = await listenHealthz(config.healthzPort, config.healthzHost ?? undefined);
  const admission = the.metrics.admission;
  const webhookContext = {
    cache: the.cache,
    options: { build: the.build, watchNamespace: config.watchNamespace },
    log: the.log.child({ actor: 'webhook' }),
    ...(admission ? { observe: (review: ReviewObservation) => admission.observe(review) } : {}),
  };
  const webhook = config.webhook?.selfSigned
    ? startSelfSignedWebhook(config.webhook, {
        ...webhookContext,
        kubeConfig: the.kc,
        ...(options.webhookCertTimings ? { timings: options.webhookCertTimings } : {}),
        ...(options.inspect ? { inspect: options.inspect } : {}),
      })
    : config.webhook
      ? await startWebhook(config.webhook, webhookContext).catch((error: unknown) => {
          if (healthz.listening) healthz.close();
          throw error;
        })
      : null;
  return { healthz, webhook };
}

/** bootConfigActor checks a config from an empty cluster; a stop during boot aborts it (its nginx -t is killed, nothing more is written). */
function bootConfigActor(config: ControllerConfig, folder: ConfigFolder, bootModel: NginxModel) {
  return fromPromise<void, void>(async ({ signal }) => {
    const bootTemplate = await loadCheckedTemplate(config.template, bootModel);
    const staged = await folder.stage(
      { config: render(bootModel, bootTemplate), files: bootModel.certificates },
      signal,
    );
    if (signal.aborted) return;
    if (!staged.ok) throw new Error(`nginx -t refused the initial config:\n${staged.error}`);
  });
}

/** provideWatcher gives the resource watcher its informers, and tells the sync queue what they list and change. */
function provideWatcher(config: ControllerConfig, kc: KubeConfig, cache: ClusterCache, log: Logger) {
  return resourceWatcherMachine.provide({
    actors: watcherActors(
      kc,
      cache,
      {
        namespace: config.watchNamespace,
        configMap: config.build.configMap ?? null,
        streamConfigMaps: [config.build.tcpServicesConfigMap, config.build.udpServicesConfigMap].filter(
          (ref): ref is string => ref !== undefined,
        ),
        allConfigMaps: config.build.gateway !== undefined,
      },
      log.child({ actor: 'watcher' }),
    ),
    actions: {
      reportSynced: enqueueActions((args, { kind }) => {
        log.info({ actor: 'watcher', kind }, 'initial list synced');
        tellSyncQueue(args, { type: 'k8s.synced', kind });
      }),
      reportChanged: enqueueActions((args, { kind, key }) => tellSyncQueue(args, { type: 'k8s.changed', kind, key })),
      // Which API server it could not reach, in every failure's line.
      ...watcherLogActions(log.child({ actor: 'watcher', server: kc.getCurrentCluster()?.server ?? '' })),
    },
  });
}

/** provideTemplate gives the template actor its loader and file watch, and says when a template is refused. */
function provideTemplate(config: ControllerConfig, bootModel: NginxModel, log: Logger) {
  const templateLog = log.child({ actor: 'template' });
  return templateMachine.provide({
    actors: templateActors(config.template, bootModel, templateLog),
    actions: {
      reportInvalid: (_, { error, fatal }) =>
        templateLog.error(
          { error, fatal },
          fatal ? 'invalid nginx template, cannot start' : 'invalid nginx template; the last good one stays',
        ),
    },
  });
}

/** provideSyncQueue gives the sync queue its sync (build, render, hand to nginx), which /metrics observes. */
function provideSyncQueue(the: { cache: ClusterCache; build: BuildOptions; metrics: ControllerMetrics; log: Logger }) {
  const { metrics } = the;
  return syncQueueMachine.provide({
    actors: syncActors({
      cache: the.cache,
      build: the.build,
      log: the.log.child({ actor: 'syncQueue' }),
      observeDuration: (durationMs) => metrics.observeSync(durationMs),
      observeModel: (snapshot, model) => metrics.model.observe(snapshot, model),
    }),
  });
}

/** provideNginx gives the nginx actor its master, reloads, pushes and drains, and tells the sync queue how they went. */
function provideNginx(
  config: ControllerConfig,
  options: ControllerOptions,
  the: {
    binary: string;
    folder: ConfigFolder;
    found: NginxCapabilities;
    control: Control | undefined;
    log: Logger;
  },
) {
  const { stream, statusSocket } = the.found;
  return nginxProcessMachine.provide({
    actors: nginxActors({
      binary: the.binary,
      dir: config.configDir,
      httpPort: config.build.httpPort,
      httpsPort: config.build.httpsPort,
      folder: the.folder,
      stdout: options.nginxStdout ?? 'ignore',
      log: the.log.child({ actor: 'nginx' }),
      sockets: () => [...(stream ? streamSockets(stream) : []), ...(statusSocket ? [statusSocket] : [])],
      ...(the.control ? { control: the.control } : {}),
    }),
    actions: {
      reportApplied: enqueueActions((args, { config }) => tellSyncQueue(args, { type: 'nginx.applied', config })),
      // Only nginx -t's refusals are the config's fault; a reload the master could not carry out is retried as it is.
      reportRefused: enqueueActions((args, { config, error }) =>
        tellSyncQueue(
          args,
          error instanceof ConfigRefusedError ? { type: 'nginx.refused', config, output: error.output } : null,
        ),
      ),
      // A refused table entry costs the objects that made it: the next sync holds them (src/sync/table-quarantine.ts).
      reportEntriesRefused: enqueueActions((args, { entries }) =>
        tellSyncQueue(args, entries.length > 0 ? { type: 'nginx.entriesRefused', entries } : null),
      ),
    },
  });
}

/** provideStatus gives the status actor the leader's duties: leader election, Ingress and Gateway API status, Events. */
function provideStatus(
  config: ControllerConfig,
  the: { kc: KubeConfig; cache: ClusterCache; pod: PodInfo; identity: string; log: Logger },
) {
  const { kc, cache, pod, identity } = the;
  const leaseNamespace = pod.namespace ?? config.status.publishService?.split('/')[0] ?? 'default';
  const statusLog = the.log.child({ actor: 'status' });
  const elector = new LeaseElector(kc.makeApiClient(CoordinationV1Api), {
    namespace: leaseNamespace,
    name: config.status.electionId,
    identity,
    leaseDurationMs: config.status.electionTtlMs,
  });
  const core = kc.makeApiClient(CoreV1Api);
  const writer = new StatusWriter({
    networking: kc.makeApiClient(NetworkingV1Api),
    core,
    cache,
    log: statusLog,
    source: {
      publishStatusAddress: config.status.publishStatusAddress,
      publishService: config.status.publishService,
      pod,
      watchNamespace: config.watchNamespace,
    },
  });
  const recorder = new EventRecorder({ core, cache, log: statusLog, instance: identity });
  // The Gateway API status (leader only, like Ingress status); its addresses are those Ingress status gets.
  const gatewayWriter = config.build.gateway
    ? new GatewayStatusWriter({
        custom: kc.makeApiClient(CustomObjectsApi),
        cache,
        controllerName: config.build.gateway.controllerName,
        addresses: async () => gatewayAddresses(await writer.addresses()),
        log: statusLog,
      })
    : undefined;
  return statusMachine.provide(
    statusActors({
      elector,
      writer,
      recorder,
      ...(gatewayWriter ? { gatewayWriter } : {}),
      lease: `${leaseNamespace}/${config.status.electionId}`,
      log: statusLog,
    }),
  );
}

/**
 * run starts the root supervisor and what runs beside it (the request metrics' drain), and once it stopped closes
 * what the start opened: the exit code and its reason resolve when all is quiet.
 */
function run(
  root: Actor<typeof rootSupervisorMachine>,
  the: {
    log: Logger;
    folder: ConfigFolder;
    listeners: Listeners;
    requestMetrics: RequestMetrics | null;
    spans: SpanExport | null;
  },
): { exitCode: Promise<0 | 1>; reason: Promise<string | null> } {
  const { log, folder, listeners, requestMetrics, spans } = the;
  const outcome = new Promise<RootSupervisorOutput>((resolve) => {
    root.subscribe({
      complete: () => {
        const output = selectExit(root.getSnapshot()) ?? { exitCode: 1, reason: 'the root supervisor gave no output' };
        if (output.exitCode === 0) log.info('stopped cleanly');
        else log.error({ reason: output.reason }, 'stopped with errors');
        resolve(output);
      },
      error: (error) => {
        log.fatal({ err: error }, 'the root supervisor crashed');
        resolve({
          exitCode: 1,
          reason: `the root supervisor crashed: ${error instanceof Error ? error.message : String(error)}`,
        });
      },
    });
  });
  root.start();
  requestMetrics?.start();
  spans?.start();
  void outcome.then(() => {
    requestMetrics?.stop();
    void spans?.stop();
  });
  // The http actor closes the bound server when it stops; stopped before it ever ran (a stop or a
  // failure during boot), the controller closes it, or it would keep the process alive.
  void outcome.then(() => listeners.healthz.listening && listeners.healthz.close());
  void outcome.then(() => listeners.webhook?.close());
  // A stage cut short by the stop may still be removing its files: the folder is quiet before the exit is told.
  const exitCode = outcome.then(async (output) => {
    await folder.idle();
    return output.exitCode;
  });
  return { exitCode, reason: outcome.then((output) => output.reason) };
}
