import type { BuildResult } from '../../src/model/build-types.js';
import type { Location, NginxModel } from '../../src/model/nginx-model.js';
import { formatProblem } from '../../src/model/problems.js';

/**
 * describeLocation reads like the rule: `= /exact -> 503`, `/api/ -> default_web_80 (ssl-redirect)`,
 * `~* ^/a(.*) -> default_web_80`, `/ -> 301 https://example.com/`, `/ -> default_web_80 (canary default_new_80)`,
 * `/ -> 503 (denied)`.
 */
export function describeLocation(l: Location): string {
  const target = l.redirect ? `${l.redirect.code} ${l.redirect.url}` : (l.upstream ?? String(l.status));
  const canary = l.pass?.canary ? ` (canary ${l.pass.canary})` : '';
  return (
    `${l.modifier ? `${l.modifier} ` : ''}${l.match} -> ` +
    `${target}${canary}${l.sslRedirect ? ' (ssl-redirect)' : ''}${l.denied ? ' (denied)' : ''}`
  );
}

/** Summary is the part of a model a fixture states: servers, their locations, upstreams, problems. */
export interface Summary {
  servers: Record<string, { cert: string; locations: string[] }>;
  upstreams: Record<string, string[]>;
  problems: string[];
}

/** summarize turns a build result into the shape fixtures write down. */
export function summarize({ model, problems }: BuildResult): Summary {
  const servers: Summary['servers'] = {};
  for (const server of [model.defaultServer, ...model.servers]) {
    servers[server.host] = { cert: server.certificateFile ?? '', locations: server.locations.map(describeLocation) };
  }
  const upstreams: Summary['upstreams'] = {};
  for (const upstream of model.upstreams) upstreams[upstream.name] = upstream.endpoints.map((e) => e.address);
  return { servers, upstreams, problems: problems.map(formatProblem) };
}

export type { NginxModel };
