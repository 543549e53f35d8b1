/**
 * The host rules: how one host is settled from the Ingress plans that touch it. Conflicts
 * between Ingresses (who owns a path, a host's default backend, canary or TLS) only ever arise
 * within one host; the oldest plan to claim a thing keeps it, and the others get a note (their
 * problem). Server-level settings (server-snippet, the client certificate check, ssl-passthrough)
 * change how every Ingress on the host is served, so they come from the host's owner alone (hostOwner),
 * never from a newer Ingress, another tenant's included. Pure: plans in, a server and notes out. Which
 * hosts to settle, and what they add up to, is src/model/incremental/host-table.ts.
 */
import { HttpExtras } from './annotations/http-extras.js';
import { compare } from './backends.js';
import {
  CATCH_ALL,
  type Identified,
  type IngressPlan,
  type OwnedRoute,
  type Step,
  type TlsStep,
} from './ingress-plan.js';
import { toLocations, type Route } from './locations.js';
import { sameItems } from './lookups.js';
import type {
  Certificate,
  ClientAuth,
  ErrorLocation,
  GlobalConfig,
  Problem,
  Server,
  SnippetDirective,
} from './nginx-model.js';
import type { CertificateTable } from './tls.js';
import { IngressRegexBudget, regexBudgetMessage } from './regex-budget.js';
import { show } from './validate.js';

/** HostContext is what working out a host needs besides the plans that touch it. */
export interface HostContext {
  readonly certificates: CertificateTable;
  /** the `/` of hosts no rule gives one */
  readonly fallback: Route;
  readonly config: GlobalConfig;
  /** the ConfigMap wants HSTS on TLS hosts */
  readonly hsts: boolean;
  /** plans in the order conflicts are settled in: oldest first, then namespace/name */
  readonly order: (a: IngressPlan, b: IngressPlan) => number;
}

/** HostResult is one host worked out: its server, and what it made of each step and TLS claim aimed at it. */
export interface HostResult {
  readonly server: Server;
  readonly routes: readonly Route[];
  readonly tlsFile: string | null;
  readonly snippet: readonly SnippetDirective[] | null;
  readonly clientAuth: ClientAuth | null;
  /** the problem this host gave a step or TLS claim (a path someone else owns, say) */
  readonly notes: ReadonlyMap<Step | TlsStep, Problem>;
  /** the upstream names its locations proxy to */
  readonly proxied: readonly string[];
  /** a location of its server asks an auth service first (auth-url) */
  readonly externalAuth: boolean;
  /** the canary selectors of its routes */
  readonly canaries: HttpExtras;
  /** its own certificate, when that is not the default one */
  readonly certificate: Certificate | null;
}

/**
 * hostOwner is the Ingress that owns a host: the oldest (in `stepPlans`' conflict order) that names it, a canary
 * excepted (it rides on its main Ingress). Every server-level setting of the host is the owner's alone.
 */
export function hostOwner(host: string, stepPlans: readonly IngressPlan[]): Identified | null {
  for (const plan of stepPlans)
    if (plan.identified && !plan.identified.annotations.canary && plan.stepsByHost.has(host)) return plan.identified;
  return null;
}

/** notOwnerMessage tells a newer Ingress that a server-level setting of a host is not its to make. */
export function notOwnerMessage(host: string, owner: string, setting: string, outcome: string): string {
  return (
    `host ${show(host)} belongs to Ingress ${owner} (the oldest Ingress naming it), which alone decides its ` +
    `server-level settings; ${setting} ${outcome}`
  );
}

/** resolveHost settles one host: the oldest plan to claim a path, fallback, canary or TLS keeps it; the owner sets the rest. */
export function resolveHost(
  host: string,
  stepPlans: readonly IngressPlan[],
  tlsPlans: readonly IngressPlan[],
  ctx: HostContext,
  previous: HostResult | undefined,
): HostResult {
  const notes = new Map<Step | TlsStep, Problem>();
  const noter = (plan: IngressPlan) => {
    const { namespace, name } = plan.identified!;
    return (step: Step | TlsStep, field: string, message: string) =>
      notes.set(step, { kind: 'Ingress', namespace, name, field, message });
  };
  const routes = new Map<string, OwnedRoute>();
  let fallback: Route | null = null;
  const owner = hostOwner(host, stepPlans);
  const ownerName = owner?.owner ?? null;
  let snippet: readonly SnippetDirective[] | null = null;
  let clientAuth: { settings: ClientAuth; secretId: string } | null = null;
  const canaryClaims: { note: ReturnType<typeof noter>; step: Extract<Step, { kind: 'canary' }> }[] = [];
  const regexes = new IngressRegexBudget();
  for (const plan of stepPlans) {
    const note = noter(plan);
    for (const step of plan.stepsByHost.get(host) ?? []) {
      if (step.kind === 'route') {
        const taken = routes.get(step.key);
        if (taken)
          note(
            step,
            `${step.field}.path`,
            `host ${show(host)} path ${show(step.route.path)} (${step.route.pathType}) is already served by Ingress ` +
              `${taken.owner}; path left out`,
          );
        else if (!regexes.admits(step.route)) {
          const { weight, used } = regexes;
          note(step, `${step.field}.path`, regexBudgetMessage(host, `path ${show(step.route.path)}`, weight, used));
        } else routes.set(step.key, step.route);
      } else if (step.kind === 'canary') canaryClaims.push({ note, step });
      else if (step.kind === 'fallback') {
        if (fallback === null) fallback = step.route;
        else if (host === CATCH_ALL)
          note(
            step,
            'spec.defaultBackend',
            `the default backend is already set by Ingress ${fallback.ingress}; ignored`,
          );
      } else if (step.kind === 'snippet') {
        if (plan.identified === owner) snippet = step.directives;
        else
          note(
            step,
            'metadata.annotations.nginx.ingress.kubernetes.io/server-snippet',
            notOwnerMessage(host, ownerName!, 'server-snippet', 'ignored there'),
          );
      } else if (step.kind === 'clientAuth') {
        if (plan.identified === owner) clientAuth = { settings: step.clientAuth, secretId: step.secretId };
        else if (!clientAuth || !sameClientAuth(clientAuth.settings, step.clientAuth)) {
          // The Ingress's own locations still demand a verified certificate (verify on): they fail closed (403).
          const applies = clientAuth ? `its check (Secret ${clientAuth.secretId}) applies here` : 'it checks none';
          note(
            step,
            'metadata.annotations.nginx.ingress.kubernetes.io/auth-tls-secret',
            notOwnerMessage(host, ownerName!, 'auth-tls', `ignored there: ${applies}`),
          );
        }
      }
    }
  }
  const canaries = attachCanaries(host, canaryClaims, routes);

  let tls: { certificate: Certificate; owner: string; secretName: string } | null = null;
  for (const plan of tlsPlans) {
    const note = noter(plan);
    const { namespace, owner } = plan.identified!;
    for (const step of plan.tls) {
      if (step.kind !== 'claim' || step.host !== host) continue;
      const secretName = step.secretName ?? '';
      if (tls) {
        if (tls.secretName !== secretName)
          note(
            step,
            `${step.field}.secretName`,
            `host ${show(host)} already has TLS from Ingress ${tls.owner} (Secret ${show(tls.secretName)}); ignored`,
          );
        continue;
      }
      const certificate = ctx.certificates.forHost(namespace, step.secretName, host, step.field, (field, message) =>
        note(step, field, message),
      );
      tls = { certificate, owner, secretName };
    }
  }

  const list: Route[] = [...routes.values()];
  if (!list.some((r) => r.pathType === 'Prefix' && r.path === '/')) list.push(fallback ?? ctx.fallback);
  const tlsFile = tls?.certificate.file ?? null;
  const snippetLines = snippet;
  const defaultFile = ctx.certificates.defaultCertificate.file;
  const clientAuthSettings = clientAuth?.settings ?? null;
  const same =
    previous &&
    previous.tlsFile === tlsFile &&
    previous.server.owner === ownerName &&
    previous.snippet === snippetLines &&
    previous.clientAuth === clientAuthSettings &&
    sameItems(previous.routes, list);
  const server = same
    ? previous.server
    : makeServer(
        host,
        ownerName,
        list,
        tlsFile,
        defaultFile,
        snippetLines,
        clientAuthSettings,
        ctx.config,
        ctx.hsts && tlsFile !== null,
      );
  return {
    server,
    routes: list,
    tlsFile,
    snippet: snippetLines,
    clientAuth: clientAuthSettings,
    notes,
    proxied: same ? previous.proxied : proxiedBy(server),
    externalAuth: same ? previous.externalAuth : server.locations.some((l) => l.externalAuth !== null),
    canaries,
    certificate: tls && tls.certificate.file !== defaultFile ? tls.certificate : null,
  };
}

/** attachCanaries gives each canary route to the main route of the same path, one canary per route, oldest first. */
function attachCanaries(
  host: string,
  claims: readonly {
    note: (step: Step, field: string, message: string) => void;
    step: Extract<Step, { kind: 'canary' }>;
  }[],
  routes: Map<string, OwnedRoute>,
): HttpExtras {
  const extras = new HttpExtras();
  for (const { note, step } of claims) {
    const main = routes.get(step.key);
    const rules = step.rules;
    if (!main || main.upstream === null) {
      note(
        step,
        `${step.field}.path`,
        `no Ingress serves host ${show(host)} path ${show(step.key.split(' ')[1])} with endpoints; canary ignored`,
      );
    } else if (main.canary) {
      note(step, `${step.field}.path`, `the route already has a canary; ignored`);
    } else if (!rules.header && !rules.cookie && rules.weight === null) {
      note(
        step,
        'metadata.annotations.nginx.ingress.kubernetes.io/canary',
        'no canary-by-header, canary-by-cookie or canary-weight: no request would reach it; ignored',
      );
    } else {
      const variable = extras.canary(`${host} ${step.key}`, main.upstream, step.upstream, rules);
      routes.set(step.key, { ...main, canary: { upstream: step.upstream, variable } });
    }
  }
  return extras;
}

/** proxiedBy lists the upstreams a server's locations proxy to (with their canaries) or render errors with. */
function proxiedBy(server: Server): string[] {
  const names = new Set<string>();
  for (const l of server.locations) {
    if (!l.pass) continue;
    if (l.upstream !== null) names.add(l.upstream);
    if (l.pass.canary !== null) names.add(l.pass.canary);
  }
  for (const e of server.errorLocations) names.add(e.upstream);
  return [...names];
}

/** serverNameFor gives nginx's server_name for a host; `*.foo.com` must match exactly one label. */
function serverNameFor(host: string): string {
  if (host === CATCH_ALL) return CATCH_ALL;
  if (!host.startsWith('*.')) return host;
  return `~^[^.]+${host.slice(1).replaceAll('.', '\\.')}$`;
}

function makeServer(
  host: string,
  owner: string | null,
  routes: readonly Route[],
  /** the host's own certificate (TLS), which may be the default one when its Secret is unusable */
  tlsFile: string | null,
  defaultFile: string,
  snippet: readonly SnippetDirective[] | null,
  clientAuth: ClientAuth | null,
  config: GlobalConfig,
  serverHsts: boolean,
): Server {
  const certificateFile = tlsFile ?? defaultFile;
  const locations = toLocations(routes, {
    tls: tlsFile !== null,
    sslRedirect: config.sslRedirect,
    forceSslRedirect: config.forceSslRedirect,
    hsts: serverHsts,
  });
  const errors = new Map<string, ErrorLocation>();
  for (const page of locations.flatMap((l) => l.errorPages ?? [])) errors.set(page.name, page);
  return {
    host,
    serverName: serverNameFor(host),
    isDefault: host === CATCH_ALL,
    owner,
    certificateFile,
    inheritsCertificate: certificateFile === defaultFile,
    ingresses: [...new Set(routes.flatMap((r) => (r.ingress ? [r.ingress] : [])))].sort(compare),
    locations,
    hsts: serverHsts,
    snippet,
    errorLocations: [...errors.values()].sort((a, b) => compare(a.name, b.name)),
    clientAuth,
  };
}

/** sameClientAuth says whether two auth-tls settings make the same server directives. */
function sameClientAuth(a: ClientAuth, b: ClientAuth): boolean {
  return (
    a.caFile === b.caFile && a.verifyClient === b.verifyClient && a.depth === b.depth && a.errorPage === b.errorPage
  );
}
