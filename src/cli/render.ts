import { text as readText } from 'node:stream/consumers';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BuildMemo, buildModel } from '../model/build.js';
import type { NginxModel } from '../model/nginx-model.js';
import type { BackendTable, IngressRouteTable } from '../model/pushed-tables.js';
import { checkLua } from '../nginx/lua.js';
import { prepareConfigDir } from '../nginx/files.js';
import { DynamicSplit } from '../sync/dynamic-split.js';
import { SharedServer } from '../sync/shared-server.js';
import { defaultBuildOptions, type BuildOptions } from '../model/build-types.js';
import { loadManifests, parseManifests, toSnapshot } from '../manifests/load.js';
import type { KubeObject, Snapshot } from '../model/snapshot.js';
import { writeConfigSet } from '../nginx/files.js';
import { nginxBinary } from '../nginx/binary.js';
import { findModules } from '../nginx/modules.js';
import { loadTemplate } from '../render/load.js';
import { render, type NginxTemplate } from '../render/render.js';
import { nameservers } from '../nginx/resolvers.js';
import { checkStream } from '../nginx/stream.js';
import { boolFlag, defaultConfigDir } from './controller-flags.js';
import type { CommandIo } from './command.js';
import { classFlags, parseFlags, parsePort } from './flags.js';
import { UsageError } from '../usage-error.js';
import { renderReport } from './render-report.js';

export const RENDER_USAGE = `Usage: ingress-actors render --manifests PATH... [--configmap ns/name] [--out DIR]
          [--http-port N] [--https-port N] [--ingress-class NAME] [--controller-class NAME]
          [--watch-ingress-without-class] [--default-ssl-certificate ns/name]
          [--default-backend-service ns/name] [--template FILE]
          [--tcp-services-configmap ns/name] [--udp-services-configmap ns/name] [--enable-ssl-passthrough]
          [--nginx-binary PATH] [--config-dir DIR] [--dynamic-backends=true|false] [--routes-as-data=true|false]

Prints the nginx.conf that the YAML manifests (files or folders, multi-document; - reads stdin,
as in: helm template ... | ingress-actors render --manifests -) produce. On stderr: the problems
found, as "namespace/name: field: message", each Ingress left to another controller and why, and
one line for the backends without EndpointSlices. With --out DIR, writes nginx.conf and every
file it names (certificates and htpasswd files, 0600) into DIR, ready for: nginx -t -p DIR/ -c DIR/nginx.conf.
The stream block (TCP and UDP services, ssl-passthrough) loads the stream module --nginx-binary's nginx -V names
(Debian's path without one) and puts its unix sockets in --out DIR, else in --config-dir (the controller's default).
--dynamic-backends=true renders as the controller does by default (false, the default here, as with
--dynamic-backends=false): the Lua balancer, and with --routes-as-data (true) the shared server, its profiles
and, on stderr, where each host is served from; --out DIR then also writes the tables the controller would push
(tables/backends.json, tables/ingress-routes.json; no certificate keys).`;

/** readManifests loads the files and folders named, `-` being stdin (read once, wherever it stands). */
export async function readManifests(paths: readonly string[], stdin: NodeJS.ReadableStream): Promise<Snapshot> {
  if (!paths.includes('-')) return loadManifests(paths);
  const piped = parseManifests(await readText(stdin), '<stdin>');
  const files = paths.filter((p) => p !== '-');
  const fromFiles = files.length > 0 ? await loadManifests(files) : null;
  const objects: KubeObject[] = fromFiles ? Object.values(fromFiles).flat() : [];
  return toSnapshot([...objects, ...piped]);
}

/** streamOptions finds the stream module and the socket folder when a flag asks for the stream block. */
async function streamOptions(values: {
  'tcp-services-configmap'?: string;
  'udp-services-configmap'?: string;
  'enable-ssl-passthrough'?: boolean;
  'nginx-binary'?: string;
  'config-dir'?: string;
  out?: string;
}): Promise<Pick<BuildOptions, 'stream'>> {
  if (!values['tcp-services-configmap'] && !values['udp-services-configmap'] && !values['enable-ssl-passthrough'])
    return {};
  const dir = values.out ?? values['config-dir'] ?? defaultConfigDir();
  const check = await checkStream(nginxBinary(values['nginx-binary']), dir);
  if (!check.ok) throw new UsageError(`the stream block needs nginx's stream module: ${check.why}`);
  return { stream: check.settings };
}

/** runRender is `ingress-actors render`: exit 0 with the config, 1 when a manifest is missing or not valid YAML. */
export async function runRender(
  argv: string[],
  { out, err, log, stdin = process.stdin }: CommandIo & { stdin?: NodeJS.ReadableStream },
): Promise<number> {
  const { values, positionals } = parseFlags(
    argv,
    {
      manifests: { type: 'string', multiple: true },
      configmap: { type: 'string' },
      out: { type: 'string' },
      template: { type: 'string' },
      'http-port': { type: 'string' },
      'https-port': { type: 'string' },
      'default-ssl-certificate': { type: 'string' },
      'default-backend-service': { type: 'string' },
      'tcp-services-configmap': { type: 'string' },
      'udp-services-configmap': { type: 'string' },
      'enable-ssl-passthrough': { type: 'boolean' },
      'nginx-binary': { type: 'string' },
      'config-dir': { type: 'string' },
      'dynamic-backends': { type: 'string' },
      'routes-as-data': { type: 'string' },
      ...classFlags,
      help: { type: 'boolean', short: 'h' },
    },
    RENDER_USAGE,
    true,
  );
  if (values.help) {
    out.write(`${RENDER_USAGE}\n`);
    return 0;
  }
  // `--manifests a.yaml b.yaml` reads naturally; the trailing names arrive as positionals.
  const manifests = [...(values.manifests ?? []), ...positionals];
  if (manifests.length === 0) throw new UsageError('render needs --manifests PATH...', RENDER_USAGE);
  const options: BuildOptions = {
    ...defaultBuildOptions,
    ingressClass: values['ingress-class'] ?? defaultBuildOptions.ingressClass,
    controllerClass: values['controller-class'] ?? defaultBuildOptions.controllerClass,
    watchIngressWithoutClass: values['watch-ingress-without-class'] ?? false,
    httpPort: parsePort('--http-port', values['http-port'], 80),
    httpsPort: parsePort('--https-port', values['https-port'], 443),
    ...(values.configmap ? { configMap: values.configmap } : {}),
    ...(values['default-ssl-certificate'] ? { defaultSslCertificate: values['default-ssl-certificate'] } : {}),
    ...(values['default-backend-service'] ? { defaultBackendService: values['default-backend-service'] } : {}),
    ...(values['tcp-services-configmap'] ? { tcpServicesConfigMap: values['tcp-services-configmap'] } : {}),
    ...(values['udp-services-configmap'] ? { udpServicesConfigMap: values['udp-services-configmap'] } : {}),
    enableSslPassthrough: values['enable-ssl-passthrough'] ?? false,
    ...(await streamOptions(values)),
  };
  const snapshot = await readManifests(manifests, stdin);
  const template = await loadTemplate(values.template);
  // The modules of the nginx on this machine, so that `--out` passes its `nginx -t` as it is.
  const modules = await findModules(nginxBinary(values['nginx-binary']));
  const dynamic = await luaOptions(values);
  const memo = new BuildMemo();
  const built = buildModel(snapshot, { ...options, ...dynamic, resolvers: await nameservers(), modules }, memo);
  const { problems } = built;
  const served = dynamic.dynamic ? servedAsTheControllerDoes(built.model, template, memo) : null;
  const model = served?.model ?? built.model;
  const text = render(model, template);
  log.debug(
    { servers: model.servers.length, upstreams: model.upstreams.length, problems: problems.length },
    'model built',
  );
  for (const line of renderReport(snapshot, options, problems)) err.write(`${line}\n`);
  // A refused DIR (not private: see src/nginx/private-files.ts) is an UnsafePathError: one line, exit 2.
  for (const line of served?.report ?? []) err.write(`${line}\n`);
  if (values.out) {
    await writeConfigSet(values.out, text, model.certificates);
    if (served) await writeTables(values.out, served.tables);
  }
  out.write(text);
  return 0;
}

/** luaOptions finds the Lua module when `--dynamic-backends=true` asks to render as the controller does by default. */
async function luaOptions(values: {
  'dynamic-backends'?: string;
  'routes-as-data'?: string;
  'nginx-binary'?: string;
  'config-dir'?: string;
  out?: string;
}): Promise<Pick<BuildOptions, 'dynamic'>> {
  if (!boolFlag('dynamic-backends', values['dynamic-backends'], false)) return {};
  const dir = values.out ?? values['config-dir'] ?? defaultConfigDir();
  await prepareConfigDir(dir);
  const check = await checkLua(nginxBinary(values['nginx-binary']), dir);
  if (!check.ok) throw new UsageError(`--dynamic-backends=true needs nginx's Lua module: ${check.why}`);
  const routesAsData = boolFlag('routes-as-data', values['routes-as-data'], true);
  return { dynamic: { ...check.settings, requestMetrics: true, routesAsData } };
}

/**
 * servedAsTheControllerDoes splits the model as a sync does: endpoints and certificates into tables, and with routes as
 * data the hosts without server-level settings into the shared server's table; a line per host says where it is served.
 */
function servedAsTheControllerDoes(model: NginxModel, template: NginxTemplate, memo: BuildMemo) {
  const split = new DynamicSplit().split(model);
  const sharing = new SharedServer().share(split.model, template.sources, memo.view?.baseConfig);
  const report: string[] = [];
  if (sharing) {
    const own = [...sharing.served].filter(([, where]) => where !== 'shared');
    report.push(
      `routes as data: ${sharing.table?.hosts.size ?? 0} hosts served by the shared server (pushed), ${own.length} by their own server`,
    );
    for (const [host, where] of own) report.push(`${host}: own server: ${where}`);
  }
  return { model: sharing?.model ?? split.model, tables: { ...split.tables, ingress: sharing?.table ?? null }, report };
}

/** writeTables writes the tables the controller would push, but the certificates (their keys stay in the files). */
async function writeTables(out: string, tables: { backends: BackendTable; ingress: IngressRouteTable | null }) {
  const dir = join(out, 'tables');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dir, 'backends.json'), `${JSON.stringify(tables.backends, null, 2)}\n`, { mode: 0o600 });
  if (tables.ingress) {
    const hosts = [...tables.ingress.hosts.values()].map((json) => JSON.parse(json) as unknown);
    const body = { version: tables.ingress.version, profiles: [...tables.ingress.profiles], hosts };
    await writeFile(join(dir, 'ingress-routes.json'), `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600 });
  }
}
