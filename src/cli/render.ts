import { text as readText } from 'node:stream/consumers';
import { buildModel } from '../model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../model/build-types.js';
import { loadManifests, parseManifests, toSnapshot } from '../manifests/load.js';
import type { KubeObject, Snapshot } from '../model/snapshot.js';
import { writeConfigSet } from '../nginx/files.js';
import { nginxBinary } from '../nginx/binary.js';
import { findModules } from '../nginx/modules.js';
import { loadTemplate } from '../render/load.js';
import { render } from '../render/render.js';
import { nameservers } from '../nginx/resolvers.js';
import { checkStream } from '../nginx/stream.js';
import { defaultConfigDir } from './controller-flags.js';
import type { CommandIo } from './command.js';
import { classFlags, parseFlags, parsePort } from './flags.js';
import { UsageError } from '../usage-error.js';
import { renderReport } from './render-report.js';

export const RENDER_USAGE = `Usage: ingress-actors render --manifests PATH... [--configmap ns/name] [--out DIR]
          [--http-port N] [--https-port N] [--ingress-class NAME] [--controller-class NAME]
          [--watch-ingress-without-class] [--default-ssl-certificate ns/name]
          [--default-backend-service ns/name] [--template FILE]
          [--tcp-services-configmap ns/name] [--udp-services-configmap ns/name] [--enable-ssl-passthrough]
          [--nginx-binary PATH] [--config-dir DIR]

Prints the nginx.conf that the YAML manifests (files or folders, multi-document; - reads stdin,
as in: helm template ... | ingress-actors render --manifests -) produce. On stderr: the problems
found, as "namespace/name: field: message", each Ingress left to another controller and why, and
one line for the backends without EndpointSlices. With --out DIR, writes nginx.conf and every
file it names (certificates and htpasswd files, 0600) into DIR, ready for: nginx -t -p DIR/ -c DIR/nginx.conf.
The stream block (TCP and UDP services, ssl-passthrough) loads the stream module --nginx-binary's nginx -V names
(Debian's path without one) and puts its unix sockets in --out DIR, else in --config-dir (the controller's default).`;

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
  const { model, problems } = buildModel(snapshot, { ...options, resolvers: await nameservers(), modules });
  const text = render(model, template);
  log.debug(
    { servers: model.servers.length, upstreams: model.upstreams.length, problems: problems.length },
    'model built',
  );
  for (const line of renderReport(snapshot, options, problems)) err.write(`${line}\n`);
  // A refused DIR (not private: see src/nginx/private-files.ts) is an UnsafePathError: one line, exit 2.
  if (values.out) await writeConfigSet(values.out, text, model.certificates);
  out.write(text);
  return 0;
}
