/**
 * /healthz: the controller is ready when it serves a config from the cluster. That takes every
 * watcher's first list and a running nginx that applied at least one config from the cluster.
 * A reload nginx refused afterwards leaves it serving the last good config: that is a warning in
 * the detail (and `nginx_ingress_controller_config_last_reload_successful` 0), not a failure,
 * or one tenant's bad Ingress would take every replica out of the load balancer at once.
 * So is a push of the Lua tables that failed while nginx holds earlier ones; only a master that holds
 * no tables at all since it (re)started fails it.
 * A watcher failing after its first sync is a warning too (the API server is away; nginx serves
 * what was last seen). Computed from the actors' snapshots at request time, through
 * the selectors their machines export.
 */
import { selectNginxHealth, type NginxHealth } from '../../machines/selectors/nginxProcess.js';
import { selectWatcherSync } from '../../machines/selectors/resourceWatcher.js';
import { selectRootPhase } from '../../machines/selectors/rootSupervisor.js';
import type { ObservedActors } from './observed.js';

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

/** oneLine joins a multi-line message (nginx -t output, say) into one line of at most 300 characters. */
const oneLine = (text: unknown) => {
  const line = String(text).replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
};

const item = (summary: string, detail?: string | null): HealthItem => ({
  summary,
  detailed: detail ? `${summary} (${detail})` : summary,
});

/**
 * tablesState is the Lua balancer's side of health. A master that holds no tables since it started (a fresh start, a
 * restart) serves only 503s: a problem. A push that failed while nginx holds earlier tables leaves it serving those
 * (one tenant's refused entry must not take the replica out of its Service): a warning, retried. Null when nginx
 * holds what it should (or backends are rendered into nginx.conf).
 */
function tablesState(tables: NginxHealth['tables']): { problem?: HealthItem; warning?: HealthItem } {
  if (tables === null) return {};
  const error = tables.failing === null ? null : oneLine(tables.failing);
  if (!tables.held) {
    const pid = tables.pid === null ? '' : ` (pid ${tables.pid})`;
    const why = `no table pushed since this nginx master${pid} started${error ? `; the last push failed: ${error}` : ''}`;
    return { problem: item('nginx has no backend table yet; pushing it', why) };
  }
  if (error)
    return {
      warning: {
        summary: 'the last push of the tables to nginx failed; nginx serves the tables it took before; retrying',
        detailed: `the last push of the tables failed: ${error} (nginx serves the tables it took before; retrying)`,
      },
    };
  return {};
}

/** checkHealth runs the checks over the actors' snapshots; `watchers` are the watched kinds. */
export function checkHealth(actors: ObservedActors, watchers: readonly string[]): Health {
  const problems: HealthItem[] = [];
  const warnings: HealthItem[] = [];
  const root = actors.root();
  if (root) {
    const phase = selectRootPhase(root);
    if (phase.phase !== 'running')
      problems.push(
        item(phase.phase === 'booting' ? 'booting: the template is not loaded yet' : `shutting down (${phase.state})`),
      );
  }
  for (const kind of watchers) {
    const view = actors.watcher(kind);
    const watcher = view && selectWatcherSync(view);
    const lastError = watcher?.lastError ? `, last error: ${oneLine(watcher.lastError)}` : '';
    if (watcher?.synced) {
      // Failing after its first sync: nginx serves what was last seen, as ingress-nginx does while
      // the API server is away, so the replica stays ready; the detail says since when it is stale.
      if (watcher.staleSince !== null) {
        const sinceIso = new Date(watcher.staleSince).toISOString();
        const summary = `watcher ${kind} is not watching since ${sinceIso}; serving what it last saw`;
        warnings.push(item(summary, `state ${watcher.state}, ${watcher.failures} failures in a row${lastError}`));
      }
      continue;
    }
    const detail = watcher ? `state ${watcher.state}${lastError}` : 'not running';
    problems.push(item(`watcher ${kind} has not synced yet`, detail));
  }
  const nginx = selectNginxHealth(actors.nginx());
  if (!nginx.running) {
    const exit = nginx.lastExit;
    const how = exit
      ? `, last exit: ${exit.error ?? (exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`)}`
      : '';
    problems.push(item('nginx is not running', `state ${nginx.state}${how}`));
  }
  if (nginx.state !== 'absent') {
    const failed = nginx.lastReloadError ? `the last reload failed: ${oneLine(nginx.lastReloadError)}` : null;
    if (!nginx.servesClusterConfig) problems.push(item('no configuration from the cluster applied yet', failed));
    else if (failed)
      warnings.push({
        summary: 'the last reload failed; nginx serves the last good config',
        detailed: `${failed} (nginx serves the last good config)`,
      });
    const tables = tablesState(nginx.tables);
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
