/**
 * What one build lends the next. buildModel stays a pure function of its snapshot and options:
 * the memo only saves work, keyed by the objects that work came from (the caches replace an
 * object on change, never mutate it), and a build with a memo gives exactly the result of one
 * without (test/property/incremental.test.ts checks it).
 */
import { BuiltUpstreams, type Resolved } from '../backends.js';
import type { BuildOptions } from '../build-types.js';
import { ServerNameSizes } from '../config-map/hash-sizing.js';
import { LocationFeatures } from './location-features.js';
import { PlansWith } from './plans-with.js';
import { PlanReaders } from './plan-readers.js';
import { readConfigMap } from '../config-map/read.js';
import { creationMillis } from '../ingress-age.js';
import type { IngressPlan } from '../ingress-plan.js';
import type { Route } from '../locations.js';
import type { Lookups } from '../lookups.js';
import type { LastGateway } from '../gateway/reuse.js';
import type { Certificate, GlobalConfig, Problem, Server } from '../nginx-model.js';
import type { ConfigMap, Ingress, IngressClass } from '../snapshot.js';
import type { CheckedSecrets } from '../tls.js';
import { BalancedUpstreams } from './balanced.js';
import { HostTable } from './host-table.js';
import { SecretReads } from './secret-reads.js';

/** Globals are the inputs every plan and server depends on; when one changes, nothing is reused. */
export interface Globals {
  readonly options: BuildOptions;
  readonly configMap: ConfigMap | undefined;
  readonly config: GlobalConfig;
  readonly configProblems: readonly Problem[];
}

/** The --default-backend-service's route target, or the controller's 404. */
export type DefaultTarget = Resolved | { readonly upstream: null; readonly status: 404 };

/**
 * BuildMemo carries what one build can lend the next: Ingress plans, upstreams and certificate
 * verdicts keyed by the objects they came from, and the hosts worked out from those plans.
 */
export class BuildMemo {
  /** each Ingress's plan, and the last build whose objects it was checked against */
  plans = new WeakMap<Ingress, { readonly plan: IngressPlan; checkedIn: Lookups }>();
  /** the last build's plans, in conflict order */
  planList: readonly IngressPlan[] = [];
  /** the problems of the plans left out whole (planList's, in its order); null: to make again */
  identifyProblems: readonly Problem[] | null = null;
  /** the Ingresses planList was made from, item by item */
  planFrom: readonly Ingress[] | null = null;
  /** planList's plans by the objects they read */
  readers = new PlanReaders();
  /** the Secrets planList reads, counted plan by plan */
  readonly secretReads = new SecretReads();
  readonly built = new BuiltUpstreams();
  readonly verdicts: CheckedSecrets = new WeakMap();
  hosts = new HostTable();
  /** creation times, parsed once per Ingress object for the age order */
  readonly ages = new WeakMap<Ingress, number>();
  globals: Globals | null = null;
  /** what the last build's Gateway API part gave (src/model/gateway/reuse.ts), handed back while it is the same */
  gateway: LastGateway | null = null;
  /** `namespace/name` of the Secrets the last build's Gateways name (src/model/gateway/secret-refs.ts), sorted */
  gatewaySecrets: readonly string[] = [];
  /** the `/` of hosts no rule gives one, kept while the default backend is the same so their servers can be reused */
  fallback: Route | null = null;
  lookups: Lookups | undefined = undefined;
  /** the Ingresses of the last build that are ours, in age order, and what decided that */
  ours: {
    readonly from: readonly Ingress[];
    readonly classes: readonly IngressClass[];
    readonly options: BuildOptions;
    readonly list: readonly Ingress[];
  } | null = null;
  /** the last build's servers split into the catch-all and the named ones, and the config fitted to their names */
  view: {
    readonly servers: readonly Server[];
    readonly baseConfig: GlobalConfig;
    readonly defaultServer: Server;
    /** defaultServer's index in servers */
    readonly at: number;
    readonly named: readonly Server[];
    readonly config: GlobalConfig;
  } | null = null;
  /** the lengths of the exact names among view.servers, for the server_names hash */
  readonly serverNames = new ServerNameSizes();
  /** the plans of Ingresses with ssl-passthrough set (the stream block's SNI map), kept while none came or went */
  readonly passthroughPlans = new PlansWith((plan) => plan.identified?.annotations.sslPassthrough === true);
  /** whether some location has the WAF, the CRS or tracing on, counted as servers come and go */
  readonly locationFeatures = new LocationFeatures();
  /** the upstreams the servers proxy to, worked out name by name as the hosts' tallies change */
  readonly balanced = new BalancedUpstreams();
  /**
   * the last certificates (and with the htpasswd files, all files) and their digest, and the tally version they were
   * made at
   */
  files: {
    readonly key: number;
    readonly defaultCertificate: Certificate;
    readonly certs: readonly Certificate[];
    readonly list: readonly Certificate[];
    readonly digest: string;
  } | null = null;

  /** age is an Ingress's creation time in milliseconds (0 when unknown), parsed once per object. */
  age(ingress: Ingress): number {
    let ms = this.ages.get(ingress);
    if (ms === undefined) this.ages.set(ingress, (ms = creationMillis(ingress)));
    return ms;
  }
}

/**
 * globalsFor reads the ConfigMap, or takes the previous build's reading when the ConfigMap and flags are the same
 * objects.
 */
export function globalsFor(memo: BuildMemo, options: BuildOptions, configMap: ConfigMap | undefined): Globals {
  const known = memo.globals;
  if (known && known.options === options && known.configMap === configMap) return known;
  const { config, problems } = readConfigMap(configMap, options.modules);
  if (config.enableOpentelemetry && !options.dynamic && configMap)
    // spans are made by the Lua balancer's phases (lua/ingress_actors/tracing.lua)
    problems.push({
      kind: 'ConfigMap',
      namespace: configMap.metadata?.namespace ?? '',
      name: configMap.metadata?.name ?? '',
      field: 'data.enable-opentelemetry',
      message: 'spans need the Lua balancer (--dynamic-backends); nothing is traced',
    });
  return { options, configMap, config, configProblems: problems };
}

/**
 * forgetAllUnlessSameSettings keeps the memo's plans, hosts, upstream list and file list while
 * the globals and the default backend are the ones they were made under, and drops them all
 * otherwise. It gives the route of hosts no rule gives a `/`: the previous build's object when
 * kept, so their servers can be reused.
 */
export function forgetAllUnlessSameSettings(memo: BuildMemo, globals: Globals, defaultBackend: DefaultTarget): Route {
  const known = memo.fallback;
  const same =
    memo.globals === globals &&
    known !== null &&
    known.upstream === defaultBackend.upstream &&
    known.status === defaultBackend.status;
  memo.globals = globals;
  if (same) return known;
  memo.plans = new WeakMap();
  memo.planList = [];
  memo.planFrom = null;
  memo.readers = new PlanReaders();
  memo.identifyProblems = null;
  memo.hosts = new HostTable();
  memo.files = null;
  return (memo.fallback = { path: '/', pathType: 'Prefix', ...defaultBackend, ingress: null, features: null });
}
