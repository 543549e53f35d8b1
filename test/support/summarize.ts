import type { BuildResult, Location, NginxModel } from '../../src/model/nginx-model.js';
import { formatProblem } from '../../src/cli/render.js';

/** describeLocation reads like the rule: `= /exact -> 503`, `/api/ -> default_web_80 (ssl-redirect)`. */
export function describeLocation(l: Location): string {
  const target = l.upstream ?? String(l.status);
  return `${l.modifier ? '= ' : ''}${l.match} -> ${target}${l.sslRedirect ? ' (ssl-redirect)' : ''}`;
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
