/**
 * Blame: which Ingresses a config that nginx refused points at. nginx names the place it stopped
 * (`… in /dir/nginx.conf.next:123`) or the file it could not load (`SSL_CTX_use_certificate(
 * "/dir/certificates/ns_name.pem") failed`); the rendered text and the model it came from say
 * whose that place is. Pure: the text, the model and nginx's words in, Ingress keys out.
 */
import type { NginxModel, Server } from '../model/nginx-model.js';
import { quote } from '../render/quote.js';

/** Blame is where nginx's refusal points: the Ingresses there, and what kind of place it was. */
export interface Blame {
  /** `namespace/name` of every Ingress the place belongs to (one, or several sharing it); empty when it is nobody's */
  readonly ingresses: readonly string[];
  /** the field of those Ingresses the place comes from, for the problem */
  readonly field: string;
}

/** refusedLine is the nginx.conf line number nginx names, or null (`… in /dir/nginx.conf.next:123`). */
export function refusedLine(output: string): number | null {
  for (const line of output.split('\n')) {
    const colon = line.lastIndexOf(':');
    const before = line.slice(0, colon);
    const number = line.slice(colon + 1).trim();
    if (
      colon > 0 &&
      /^\d{1,9}$/.test(number) &&
      (before.endsWith('/nginx.conf.next') || before.endsWith('/nginx.conf'))
    ) {
      return Number(number);
    }
  }
  return null;
}

/** namedFiles are the files nginx quotes in its refusal: `("…/certificates/x.pem")`. */
function namedFiles(output: string): string[] {
  return [...output.matchAll(/\("([^"\n]{1,4096})"\)/g)].map((m) => m[1] ?? '');
}

/** Place is the block a config line lies in: its server (by the server_name line) and location. */
interface Place {
  readonly serverName: string | null;
  readonly location: string | null;
  readonly upstream: string | null;
}

/** blockOf is the kind of block a (trimmed) line opens, `location` say, or null when it opens none. */
function blockOf(line: string): string | null {
  if (!line.endsWith('{') || line.startsWith('#')) return null;
  return line.split(' ', 1)[0]?.replace(/\{$/, '') ?? null;
}

/**
 * placeOf walks the text down to `line`, keeping the stack of open blocks, and says which
 * server, location and upstream that line is inside (the server by its `server_name` line).
 */
function placeOf(text: string, line: number): Place {
  const stack: { kind: string; head: string }[] = [];
  let serverName: string | null = null;
  const lines = text.split('\n', line);
  for (let i = 0; i < lines.length; i++) {
    const current = (lines[i] ?? '').trim();
    const opened = blockOf(current);
    if (opened !== null) {
      stack.push({ kind: opened, head: current });
      if (opened === 'server') serverName = null;
      continue;
    }
    if (current === '}') {
      stack.pop();
      continue;
    }
    if (current.startsWith('server_name ') && stack.at(-1)?.kind === 'server') serverName = current;
  }
  const find = (kind: string) => [...stack].reverse().find((b) => b.kind === kind)?.head ?? null;
  const inServer = stack.some((b) => b.kind === 'server');
  return { serverName: inServer ? serverName : null, location: find('location'), upstream: find('upstream') };
}

const serverNameLine = (server: Server) => `server_name ${quote(server.serverName)};`;

/**
 * blame says which Ingresses a refused config points at. A line inside a location is that
 * location's Ingress; elsewhere in a server, every Ingress of the server; in an upstream, every
 * Ingress proxying to it; a certificate or htpasswd file, the Ingresses that named its Secret. A
 * place outside all of these (the http level: ConfigMap keys, the template) is nobody's: null.
 */
export function blame(output: string, text: string, model: NginxModel): Blame | null {
  const line = refusedLine(output);
  if (line !== null) {
    const place = placeOf(text, line);
    const server =
      place.serverName === null ? undefined : model.servers.find((s) => serverNameLine(s) === place.serverName);
    if (server) {
      const location =
        place.location === null ? undefined : server.locations.find((l) => locationHead(l) === place.location);
      if (location?.ingress) return { ingresses: [location.ingress], field: 'spec.rules' };
      return server.ingresses.length > 0 ? { ingresses: [...server.ingresses], field: 'spec' } : null;
    }
    if (place.upstream !== null) {
      const users = model.servers
        .flatMap((s) => s.locations)
        .filter((l) => l.upstream !== null && place.upstream === `upstream ${quote(l.upstream)} {`);
      return ownersOf(
        users.map((l) => l.ingress),
        'spec.rules',
      );
    }
    return null;
  }
  for (const file of namedFiles(output)) {
    const certificate = model.certificates.find((c) => file === c.file || file.endsWith(`/${c.file}`));
    if (!certificate || certificate.id === 'default') continue;
    const namespace = certificate.id.split('/')[0] ?? '';
    const tls = model.servers.filter(
      (s) => s.certificateFile === certificate.file || s.clientAuth?.caFile === certificate.file,
    );
    const fromServers = tls.flatMap((s) => s.ingresses).filter((key) => key.startsWith(`${namespace}/`));
    const fromLocations = model.servers
      .flatMap((s) => s.locations)
      .filter((l) => l.auth?.file === certificate.file)
      .map((l) => l.ingress);
    const owners = ownersOf(
      [...fromServers, ...fromLocations],
      certificate.file.startsWith('auth/') ? 'metadata.annotations' : 'spec.tls',
    );
    if (owners) return owners;
  }
  return null;
}

function ownersOf(keys: readonly (string | null)[], field: string): Blame | null {
  const ingresses = [...new Set(keys.filter((k): k is string => k !== null))].sort();
  return ingresses.length > 0 ? { ingresses, field } : null;
}

/** locationHead is a location's opening line as the template writes it. */
function locationHead(location: { readonly modifier: string; readonly match: string }): string {
  return `location ${location.modifier ? `${location.modifier} ` : ''}${quote(location.match)} {`;
}
