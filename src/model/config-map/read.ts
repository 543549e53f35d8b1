/** readConfigMap: the controller's ConfigMap → GlobalConfig, with a problem for each value left at its default. */
import type { GlobalConfig, Problem } from '../nginx-model.js';
import type { NginxModules } from '../machine-settings.js';
import type { ConfigMap } from '../snapshot.js';
import { defaultGlobalConfig } from './defaults.js';
import { configKeys, type MutableGlobalConfig } from './registry.js';
import { refusedConfigKeys } from './refused.js';

const byKey = new Map(configKeys.map((k) => [k.key, k]));
const refusedByKey = new Map(refusedConfigKeys.map((k) => [k.key, k.reason]));

/**
 * readConfigMap applies a ConfigMap's data over the defaults. A bad value is a problem and its
 * default stays; an unknown key is a problem too, so a typo does not pass silently.
 */
export function readConfigMap(
  configMap: ConfigMap | undefined,
  modules: NginxModules = {},
): { config: GlobalConfig; problems: Problem[] } {
  const config: MutableGlobalConfig = { ...defaultGlobalConfig };
  const problems: Problem[] = [];
  if (!configMap) return { config, problems };
  const at = (field: string, message: string): Problem => ({
    kind: 'ConfigMap',
    namespace: configMap.metadata?.namespace ?? '',
    name: configMap.metadata?.name ?? '',
    field,
    message,
  });
  const data = configMap.data ?? {};
  for (const name of Object.keys(data).sort()) {
    const entry = byKey.get(name);
    const value = data[name];
    if (!entry) {
      const reason = refusedByKey.get(name);
      problems.push(
        at(
          `data.${name}`,
          reason ? `is not supported (${reason}); ignored` : 'is not a key this controller supports; ignored',
        ),
      );
      continue;
    }
    if (typeof value !== 'string') {
      problems.push(at(`data.${name}`, 'must be a string'));
      continue;
    }
    const checked = entry.apply(value, config, modules);
    if (!checked.ok) problems.push(at(`data.${name}`, `${checked.message}; keeping the default`));
  }
  if ((config.http2MaxFieldSize === null) !== (config.http2MaxHeaderSize === null)) {
    problems.push(
      at('data.http2-max-field-size', 'http2-max-field-size and http2-max-header-size take effect only together'),
    );
    config.http2MaxFieldSize = null;
    config.http2MaxHeaderSize = null;
  }
  return { config, problems };
}
