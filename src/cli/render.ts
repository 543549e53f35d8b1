import { parseArgs } from 'node:util';
import { buildModel, defaultBuildOptions, type BuildOptions } from '../model/build.js';
import type { Problem } from '../model/nginx-model.js';
import { loadManifests } from '../manifests/load.js';
import { writeConfigSet } from '../nginx/files.js';
import { loadTemplate } from '../render/load.js';
import { render } from '../render/render.js';
import { nameservers } from '../nginx/resolvers.js';
import type { CommandIo } from './command.js';
import { classFlags, parsePort, UsageError } from './flags.js';

/** formatProblem prints a problem as `namespace/name: field: message`. */
export function formatProblem(problem: Problem): string {
  const who = problem.namespace ? `${problem.namespace}/${problem.name}` : problem.name;
  return `${who}: ${problem.field}: ${problem.message}`;
}

export const RENDER_USAGE = `Usage: ingress-actors render --manifests PATH... [--configmap ns/name] [--out DIR]
          [--http-port N] [--https-port N] [--ingress-class NAME] [--controller-class NAME]
          [--watch-ingress-without-class] [--default-ssl-certificate ns/name]
          [--default-backend-service ns/name] [--template FILE]

Prints the nginx.conf that the YAML manifests (files or folders, multi-document) produce; the
problems found go to stderr as "namespace/name: field: message". With --out DIR, writes
nginx.conf and every file it names (certificates and htpasswd files, 0600) into DIR, ready for: nginx -t -p DIR/ -c DIR/nginx.conf`;

/** runRender is `ingress-actors render`: exit 0 with the config, 1 when a manifest is not valid YAML. */
export async function runRender(argv: string[], { out, err, log }: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      manifests: { type: 'string', multiple: true },
      configmap: { type: 'string' },
      out: { type: 'string' },
      template: { type: 'string' },
      'http-port': { type: 'string' },
      'https-port': { type: 'string' },
      'default-ssl-certificate': { type: 'string' },
      'default-backend-service': { type: 'string' },
      ...classFlags,
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    out.write(`${RENDER_USAGE}\n`);
    return 0;
  }
  // `--manifests a.yaml b.yaml` reads naturally; the trailing names arrive as positionals.
  const manifests = [...(values.manifests ?? []), ...positionals];
  if (manifests.length === 0) throw new UsageError('render needs --manifests PATH...');
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
  };
  const snapshot = await loadManifests(manifests);
  const template = await loadTemplate(values.template);
  const { model, problems } = buildModel(snapshot, { ...options, resolvers: await nameservers() });
  const text = render(model, template);
  log.debug({ servers: model.servers.length, upstreams: model.upstreams.length, problems: problems.length }, 'model built');
  for (const problem of problems) err.write(`${formatProblem(problem)}\n`);
  if (values.out) await writeConfigSet(values.out, text, model.certificates);
  out.write(text);
  return 0;
}
