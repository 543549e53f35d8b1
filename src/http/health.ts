/**
 * /healthz: the controller is healthy when it serves what the cluster says. That takes every
 * watcher's first list, a running nginx, and a last reload that succeeded (a refused config
 * leaves nginx serving an old one). Computed from the actors' snapshots at request time.
 */

/** ActorView is the part of an actor snapshot the checks read. */
export interface ActorView {
  readonly value: unknown;
  readonly status: string;
  readonly context?: Readonly<Record<string, unknown>>;
}

/** ActorLookup finds an actor's snapshot by systemId (`root`, `nginx`, `watcher.Ingress`, …). */
export type ActorLookup = (systemId: string) => ActorView | undefined;

/** Health is the verdict: ok, or the reasons it is not, one line each. */
export interface Health {
  readonly ok: boolean;
  readonly reasons: readonly string[];
}

/** stateLabel flattens a state value to a dotted path; parallel regions stop at their parent (`leader`). */
export function stateLabel(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 1) {
      const [key, child] = entries[0]!;
      return typeof child === 'object' && child !== null && Object.keys(child).length > 1 ? key : `${key}.${stateLabel(child)}`;
    }
  }
  return String(value);
}

/** oneLine joins a multi-line message (nginx -t output, say) into one line of at most 300 characters. */
const oneLine = (text: unknown) => {
  const line = String(text).replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
};

/** checkHealth runs the checks over the actors' snapshots; `watchers` are the watched kinds. */
export function checkHealth(lookup: ActorLookup, watchers: readonly string[]): Health {
  const reasons: string[] = [];
  const root = lookup('root');
  if (root && root.value !== 'running') reasons.push(root.value === 'booting' ? 'booting: the template is not loaded yet' : `shutting down (${stateLabel(root.value)})`);
  for (const kind of watchers) {
    const watcher = lookup(`watcher.${kind}`);
    if (watcher?.context?.reportedSynced === true) continue;
    const detail = watcher ? `state ${stateLabel(watcher.value)}${watcher.context?.lastError ? `, last error: ${oneLine(watcher.context.lastError)}` : ''}` : 'not running';
    reasons.push(`watcher ${kind} has not synced yet (${detail})`);
  }
  const nginx = lookup('nginx');
  const state = nginx ? stateLabel(nginx.value) : 'absent';
  if (state !== 'alive.running' && state !== 'alive.reloading') {
    const exit = nginx?.context?.lastExit as { code?: number | null; signal?: string | null; error?: string | null } | null | undefined;
    const how = exit ? `, last exit: ${exit.error ?? (exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`)}` : '';
    reasons.push(`nginx is not running (state ${state}${how})`);
  }
  if (nginx?.context) {
    if (nginx.context.lastReloadError) reasons.push(`the last reload failed: ${oneLine(nginx.context.lastReloadError)}`);
    else if (nginx.context.reloadsOk === 0) reasons.push('no configuration from the cluster applied yet');
  }
  return { ok: reasons.length === 0, reasons };
}
