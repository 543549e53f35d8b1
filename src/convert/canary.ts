/**
 * Canary Ingresses, folded into the routes they shadow: a canary-by-header becomes a rule matching the header before
 * the main one, a canary-weight a weighted backendRef beside the main backends.
 */
import { normalisePath } from '../model/locations.js';
import { checkHost, checkPath, checkPathType } from '../model/validate.js';
import { CATCH_ALL, type Draft, type Ident } from './draft.js';
import type { IngressReader } from './read-ingress.js';

/** foldCanary adds a canary Ingress's backends to the rules of the drafts it shadows. */
export function foldCanary(reader: IngressReader, id: Ident, drafts: readonly Draft[]): void {
  const canary = id.settings.canary!;
  // Reported already, value by value (read-settings.ts).
  if (canary.leftOut) return;
  if (canary.header === null && canary.weight === null) {
    reader.report(
      id.owner,
      'metadata.annotations.nginx.ingress.kubernetes.io/canary',
      'a canary without canary-weight or canary-by-header takes no traffic here; left out',
    );
    return;
  }
  for (const [i, rule] of (id.ingress.spec?.rules ?? []).entries()) {
    const host = rule.host ? (checkHost(rule.host).ok ? rule.host : null) : CATCH_ALL;
    for (const [j, p] of (rule.http?.paths ?? []).entries()) {
      const pf = `spec.rules[${i}].http.paths[${j}]`;
      const type = checkPathType(p.pathType);
      const path = checkPath(p.path ?? '/');
      const key =
        type.ok && path.ok
          ? `${type.value === 'Exact' ? 'Exact' : 'PathPrefix'} ${normalisePath(path.value, type.value)}`
          : null;
      const main = drafts
        .filter((d) => d.host === host && d.ingress.className === id.className)
        .flatMap((d) => d.rules)
        .find((r) => r.key === key && r.backends.length > 0);
      if (!main) {
        reader.report(id.owner, pf, 'no main Ingress serves this host and path with a backend; canary path left out');
        continue;
      }
      if (reader.resource(id, p.backend, `${pf}.backend`)) continue;
      const backend = reader.backend(id, p.backend, `${pf}.backend`);
      if (!backend) continue;
      const mains = main.backends.map((b) => ({ ...b }));
      if (canary.header !== null) {
        const header = (value: string) => ({
          ...main.match,
          headers: [{ type: 'Exact', name: canary.header, value }],
        });
        main.extra.push({
          ...main,
          match: header(canary.headerValue ?? 'always'),
          backends: [{ ...backend }],
          extra: [],
        });
        if (canary.headerValue === null && canary.weight !== null)
          main.extra.push({ ...main, match: header('never'), backends: mains, extra: [] });
      }
      if (canary.weight !== null && canary.weight > 0) {
        for (const b of main.backends) b.weight = canary.total - canary.weight;
        main.backends.push({ ...backend, weight: canary.weight });
      }
    }
  }
}
