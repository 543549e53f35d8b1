/**
 * /healthz: the controller is ready when it serves a config from the cluster. That takes every
 * watcher's first list and a running nginx that applied at least one config from the cluster.
 * A reload nginx refused afterwards leaves it serving the last good config: that is a warning in
 * the detail (and `nginx_ingress_controller_config_last_reload_successful` 0), not a failure,
 * or one tenant's bad Ingress would take every replica out of the load balancer at once.
 * So is a push of the Lua tables that failed while nginx holds earlier ones; only a master that holds
 * no tables at all since it (re)started fails it.
 * A watcher failing after its first sync is a warning too (the API server is away; nginx serves
 * what was last seen). Computed from the actors' snapshots at request time.
 */

/** ActorView is the part of an actor snapshot the checks read. */
export interface ActorView {
  readonly value: unknown;
  readonly status: string;
  readonly context?: Readonly<Record<string, unknown>>;
}

/** ActorLookup finds an actor's snapshot by systemId (`root`, `nginx`, `watcher.Ingress`, …). */
export type ActorLookup = (systemId: string) => ActorView | undefined;

/** HealthItem is one line of the verdict: a short `summary` for anyone, `detailed` for the local admin. */
export interface HealthItem {
  readonly summary: string;
  /** the summary with what was seen (nginx -t output, API errors): may name hosts, files, objects */
  readonly detailed: string;
}

/** Health is the verdict: ok unless there are problems; warnings never fail it. */
export interface Health {
  readonly ok: boolean;
  readonly problems: readonly HealthItem[];
  readonly warnings: readonly HealthItem[];
}

/** stateLabel flattens a state value to a dotted path; parallel regions stop at their parent (`leader`). */
export function stateLabel(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 1) {
      const [key, child] = entries[0]!;
      return typeof child === 'object' && child !== null && Object.keys(child).length > 1
        ? key
        : `${key}.${stateLabel(child)}`;
    }
  }
  return String(value);
}

/** oneLine joins a multi-line message (nginx -t output, say) into one line of at most 300 characters. */
const oneLine = (text: unknown) => {
  const line = String(text).replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
};

const item = (summary: string, detail?: string | null): HealthItem => ({
  summary,
  detailed: detail ? `${summary} (${detail})` : summary,
});

/** ReloadState is what the nginx actor says about its configs: for /healthz, and for whoever reports failed reloads. */
export interface ReloadState {
  /** nginx runs (`alive.running`, or `alive.reloading` or `alive.pushing`, where the master serves on) */
  readonly running: boolean;
  /** at least one config from the cluster was applied by this nginx actor */
  readonly servesClusterConfig: boolean;
  /** the last reload attempt failed (nginx -t refused it, or it could not be written or signalled) */
  readonly lastReloadFailed: boolean;
  /** why, one line; null when the last reload succeeded */
  readonly lastReloadError: string | null;
  readonly reloadsFailed: number;
}

/** reloadState reads the nginx actor's snapshot (undefined when it is not running). */
export function reloadState(nginx: ActorView | undefined): ReloadState {
  const state = nginx ? stateLabel(nginx.value) : 'absent';
  const error = nginx?.context?.lastReloadError;
  return {
    // A push or a reload in progress leaves the master serving: only a missing table (below) is a problem.
    running: state === 'alive.running' || state === 'alive.reloading' || state === 'alive.pushing',
    servesClusterConfig: Number(nginx?.context?.reloadsOk ?? 0) > 0,
    lastReloadFailed: typeof error === 'string' && error !== '',
    lastReloadError: typeof error === 'string' && error !== '' ? oneLine(error) : null,
    reloadsFailed: Number(nginx?.context?.reloadsFailed ?? 0),
  };
}

/**
 * tablesState is the Lua balancer's side of health. A master that holds no tables since it started (a fresh start, a
 * restart) serves only 503s: a problem. A push that failed while nginx holds earlier tables leaves it serving those
 * (one tenant's refused entry must not take the replica out of its Service): a warning, retried. Null when nginx
 * holds what it should (or backends are rendered into nginx.conf).
 */
function tablesState(context: Readonly<Record<string, unknown>>): { problem?: HealthItem; warning?: HealthItem } {
  if (context.tables === null || context.tables === undefined) return {};
  const error = typeof context.lastPushError === 'string' ? oneLine(context.lastPushError) : null;
  const failing = error !== null && Number(context.pushFailuresInRow ?? 0) > 0;
  if (context.pushed === null) {
    const pid = typeof context.pid === 'number' ? ` (pid ${context.pid})` : '';
    const why = `no table pushed since this nginx master${pid} started${failing ? `; the last push failed: ${error}` : ''}`;
    return { problem: item('nginx has no backend table yet; pushing it', why) };
  }
  if (failing)
    return {
      warning: {
        summary: 'the last push of the tables to nginx failed; nginx serves the tables it took before; retrying',
        detailed: `the last push of the tables failed: ${error} (nginx serves the tables it took before; retrying)`,
      },
    };
  return {};
}

/** checkHealth runs the checks over the actors' snapshots; `watchers` are the watched kinds. */
export function checkHealth(lookup: ActorLookup, watchers: readonly string[]): Health {
  const problems: HealthItem[] = [];
  const warnings: HealthItem[] = [];
  const root = lookup('root');
  if (root && root.value !== 'running')
    problems.push(
      item(
        root.value === 'booting'
          ? 'booting: the template is not loaded yet'
          : `shutting down (${stateLabel(root.value)})`,
      ),
    );
  for (const kind of watchers) {
    const watcher = lookup(`watcher.${kind}`);
    if (watcher?.context?.reportedSynced === true) {
      // Failing after its first sync: nginx serves what was last seen, as ingress-nginx does while
      // the API server is away, so the replica stays ready; the detail says since when it is stale.
      const since = watcher.context.staleSince;
      if (typeof since === 'number') {
        const sinceIso = new Date(since).toISOString();
        const summary = `watcher ${kind} is not watching since ${sinceIso}; serving what it last saw`;
        const error = watcher.context.lastError ? `, last error: ${oneLine(watcher.context.lastError)}` : '';
        warnings.push(
          item(
            summary,
            `state ${stateLabel(watcher.value)}, ${Number(watcher.context.failures ?? 0)} failures in a row${error}`,
          ),
        );
      }
      continue;
    }
    const detail = watcher
      ? `state ${stateLabel(watcher.value)}` +
        `${watcher.context?.lastError ? `, last error: ${oneLine(watcher.context.lastError)}` : ''}`
      : 'not running';
    problems.push(item(`watcher ${kind} has not synced yet`, detail));
  }
  const nginx = lookup('nginx');
  const reload = reloadState(nginx);
  if (!reload.running) {
    const exit = nginx?.context?.lastExit as
      | { code?: number | null; signal?: string | null; error?: string | null }
      | null
      | undefined;
    const how = exit
      ? `, last exit: ${exit.error ?? (exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`)}`
      : '';
    problems.push(item('nginx is not running', `state ${nginx ? stateLabel(nginx.value) : 'absent'}${how}`));
  }
  if (nginx?.context) {
    const failed = reload.lastReloadError ? `the last reload failed: ${reload.lastReloadError}` : null;
    if (!reload.servesClusterConfig) problems.push(item('no configuration from the cluster applied yet', failed));
    else if (failed)
      warnings.push({
        summary: 'the last reload failed; nginx serves the last good config',
        detailed: `${failed} (nginx serves the last good config)`,
      });
    const tables = tablesState(nginx.context);
    if (tables.problem) problems.push(tables.problem);
    if (tables.warning) warnings.push(tables.warning);
  }
  return { ok: problems.length === 0, problems, warnings };
}

/**
 * healthText is the /healthz body: `ok` or one problem per line, then `warning: …` lines. With
 * `detailed` false, only the summaries: nginx -t output and API errors name hosts, files and
 * objects, which are for the admin on the node, not for whoever can reach the probe port.
 */
export function healthText(health: Health, detailed: boolean): string {
  const line = (i: HealthItem) => (detailed ? i.detailed : i.summary);
  const lines = [
    ...(health.ok ? ['ok'] : health.problems.map(line)),
    ...health.warnings.map((w) => `warning: ${line(w)}`),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * isLoopbackAddress says whether a socket's remote address is this machine: 127.0.0.0/8, ::1, or 127.x mapped into
 * IPv6.
 */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined || address.length > 45) return false;
  if (address === '::1') return true;
  const v4 = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  const parts = v4.split('.');
  return parts.length === 4 && parts[0] === '127' && parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255);
}
