import { Document, parse, visit } from 'yaml';
import { convertIngresses, defaultConvertOptions, unexpressedLine } from '../convert/convert.js';
import { checkConfigMapRef } from '../convert/stream-services.js';
import { isGatewayControllerName } from '../model/gateway/values.js';
import { checkDnsLabel, checkObjectName } from '../model/validate.js';
import type { CommandIo } from './command.js';
import { parseFlags } from './flags.js';
import { UsageError } from '../usage-error.js';
import { readManifests } from './render.js';

export const CONVERT_USAGE = `Usage: ingress-actors convert --manifests PATH... [--gateway-class-name NAME] [--no-gateway-class]
          [--gateway-name NAME] [--gateway-namespace NS] [--gateway-controller-name NAME]
          [--controller-class NAME] [--tcp-services-configmap NS/NAME] [--udp-services-configmap NS/NAME]

Prints the Gateway API objects (standard channel) that the Ingresses in the YAML manifests (files or folders,
multi-document; - reads stdin) become: a GatewayClass (unless --no-gateway-class), one Gateway per IngressClass in
use, its HTTPRoutes and ReferenceGrants. On stderr, one line per annotation or Ingress feature the output does not
express (or expresses with a difference), as "namespace/name: field: reason". An Ingress whose IngressClass, when
the manifests hold it, is another controller's than --controller-class (k8s.io/ingress-nginx) is left out. The
entries of the ConfigMaps --tcp-services-configmap and --udp-services-configmap name (as ingress-nginx's flags, the
ConfigMaps in the manifests) become TCP and UDP listeners on the first Gateway, and TCPRoutes and UDPRoutes. Exit 0
when it converted, 1 when a manifest is missing or not valid YAML. The verdict on every annotation: docs/convert.md.`;

/** checked checks a name flag with its validator, as a UsageError. */
function checked(flag: string, value: string | undefined, check: typeof checkObjectName): string | undefined {
  if (value === undefined) return undefined;
  const result = check(value);
  if (!result.ok) throw new UsageError(`${flag}: ${result.message}`, CONVERT_USAGE);
  return result.value;
}

/** configMapFlag checks a services ConfigMap flag (`namespace/name`) into its option, as a UsageError. */
function configMapFlag<K extends string>(
  flag: string,
  option: K,
  value: string | undefined,
): Partial<Record<K, string>> {
  if (value === undefined) return {};
  const message = checkConfigMapRef(value);
  if (message !== null) throw new UsageError(`--${flag}: ${message}`, CONVERT_USAGE);
  return { [option]: value } as Partial<Record<K, string>>;
}

/** MAY_RESOLVE_OTHERWISE: how a scalar YAML 1.2's core schema reads as null, a boolean or a number begins. */
const MAY_RESOLVE_OTHERWISE = /^[0-9+\-.~nNtTfF]/;

/**
 * toYaml prints objects as one multi-document YAML stream, without anchors (kubectl and people read it as written).
 * A string is quoted wherever either YAML reads it otherwise: kubectl's YAML 1.1 (`off`, `yes`, `1:20`, `1_000`)
 * as a boolean or number, which the 1.1 document settles, and YAML 1.2 (`0o17`), which the check below does.
 */
export function toYaml(objects: readonly object[]): string {
  return objects
    .map((o) => {
      const doc = new Document(o, { version: '1.1', aliasDuplicateObjects: false });
      visit(doc, {
        Scalar(_key, node) {
          // a multi-line string is a block scalar, a string whatever it holds
          const value = node.value;
          if (typeof value !== 'string' || value.includes('\n') || !MAY_RESOLVE_OTHERWISE.test(value)) return;
          let same: boolean;
          try {
            same = parse(value) === value;
          } catch {
            same = false;
          }
          if (!same) node.type = 'QUOTE_DOUBLE';
        },
      });
      return doc.toString({ lineWidth: 0 });
    })
    .join('---\n');
}

/** runConvert is `ingress-actors convert`: Gateway API YAML on stdout, what it cannot express on stderr. */
export async function runConvert(
  argv: string[],
  { out, err, log, stdin = process.stdin }: CommandIo & { stdin?: NodeJS.ReadableStream },
): Promise<number> {
  const { values, positionals } = parseFlags(
    argv,
    {
      manifests: { type: 'string', multiple: true },
      'gateway-class-name': { type: 'string' },
      'no-gateway-class': { type: 'boolean' },
      'gateway-name': { type: 'string' },
      'gateway-namespace': { type: 'string' },
      'gateway-controller-name': { type: 'string' },
      'controller-class': { type: 'string' },
      'tcp-services-configmap': { type: 'string' },
      'udp-services-configmap': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    CONVERT_USAGE,
    true,
  );
  if (values.help) {
    out.write(`${CONVERT_USAGE}\n`);
    return 0;
  }
  const manifests = [...(values.manifests ?? []), ...positionals];
  if (manifests.length === 0) throw new UsageError('convert needs --manifests PATH...', CONVERT_USAGE);
  const controllerName = values['gateway-controller-name'] ?? defaultConvertOptions.controllerName;
  if (!isGatewayControllerName(controllerName))
    throw new UsageError(`--gateway-controller-name: ${JSON.stringify(controllerName)} is not a domain-prefixed path`);
  const gatewayNamespace = checked('--gateway-namespace', values['gateway-namespace'], checkDnsLabel);
  const options = {
    gatewayClassName:
      checked('--gateway-class-name', values['gateway-class-name'], checkObjectName) ??
      defaultConvertOptions.gatewayClassName,
    controllerName,
    emitGatewayClass: !values['no-gateway-class'],
    controllerClass: values['controller-class'] ?? defaultConvertOptions.controllerClass,
    gatewayName:
      checked('--gateway-name', values['gateway-name'], checkObjectName) ?? defaultConvertOptions.gatewayName,
    ...(gatewayNamespace === undefined ? {} : { gatewayNamespace }),
    ...configMapFlag('tcp-services-configmap', 'tcpServices', values['tcp-services-configmap']),
    ...configMapFlag('udp-services-configmap', 'udpServices', values['udp-services-configmap']),
  };
  const snapshot = await readManifests(manifests, stdin);
  const { objects, unexpressed } = convertIngresses(snapshot, options);
  log.debug({ objects: objects.length, unexpressed: unexpressed.length }, 'converted');
  for (const u of unexpressed) err.write(`${unexpressedLine(u)}\n`);
  out.write(toYaml(objects));
  return 0;
}
