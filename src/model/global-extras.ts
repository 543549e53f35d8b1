/**
 * The http-level extras of the ConfigMap that depend on more than its own data: the nginx modules
 * a key needs (brotli, headers-more), and the header ConfigMaps add-headers and proxy-set-headers
 * name. Pure: the module paths come from BuildOptions (src/nginx/modules.ts, at start), the ConfigMaps from the
 * snapshot.
 */
import type { GlobalConfig, Header, Problem } from './nginx-model.js';
import type { NginxModules } from './machine-settings.js';
import type { ConfigMap } from './snapshot.js';
import { checkValue, CONTROLLER_PROXY_HEADERS } from './snippet-policy.js';
import { checkDnsLabel, checkHeaderName, show } from './validate.js';
import { OPTIONAL_MODULES } from './optional-modules.js';

/** GlobalExtras are what the template needs beyond GlobalConfig. */
export interface GlobalExtras {
  /** the config, with enable-brotli off when nginx has no brotli module */
  readonly config: GlobalConfig;
  /** load_module paths, in a fixed order: headers-more whenever present (snippets may use it), brotli while on */
  readonly modules: readonly string[];
  /** add-headers, each as `Name: value` for more_set_headers */
  readonly addHeaders: readonly string[];
  readonly proxySetHeaders: readonly Header[];
  /** server-tokens off with headers-more: no Server header at all, as ingress-nginx (else `Server: nginx`) */
  readonly clearServerHeader: boolean;
}

/** HEADER_CONFIGMAP_KEYS are the keys of the controller ConfigMap that name another ConfigMap, in any namespace. */
const HEADER_CONFIGMAP_KEYS = ['add-headers', 'proxy-set-headers'] as const;

/**
 * headerConfigMapsNamed is `ns/name` of each header ConfigMap the controller ConfigMap's `data` names (well-formed
 * names only) that `watched` (namespaces, or `ns/name`s, already watched) does not cover: the ConfigMap watcher
 * follows each by name, as ingress-nginx reads them from any namespace.
 */
export function headerConfigMapsNamed(data: Readonly<Record<string, string>>, watched: readonly string[]): string[] {
  const refs = new Set<string>();
  for (const key of HEADER_CONFIGMAP_KEYS) {
    const [namespace, name, ...rest] = (data[key] ?? '').split('/');
    if (rest.length > 0 || !checkDnsLabel(namespace).ok || !checkDnsLabel(name).ok) continue;
    if (!watched.includes(namespace!) && !watched.includes(`${namespace}/${name}`)) refs.add(`${namespace}/${name}`);
  }
  return [...refs].sort();
}

/**
 * globalExtras settles the modules and reads the header ConfigMaps (in any namespace: the ConfigMap watcher follows
 * those --configmap names). `controllerConfigMap` is `ns/name` of --configmap, where problems of its keys go.
 */
export function globalExtras(
  config: GlobalConfig,
  configMaps: readonly ConfigMap[],
  controllerConfigMap: string | undefined,
  modules: NginxModules,
  problems: Problem[],
): GlobalExtras {
  const [namespace = '', name = ''] = controllerConfigMap?.split('/') ?? [];
  const at = (field: string, message: string) =>
    problems.push({ kind: 'ConfigMap', namespace, name, field: `data.${field}`, message });
  // headers-more is loaded whenever present: a filter that does nothing where no directive of its is set.
  const load: string[] = modules.headersMore ? [modules.headersMore] : [];
  let settled = config;
  if (config.enableBrotli) {
    if (modules.brotli) load.push(modules.brotli);
    else {
      at(
        'enable-brotli',
        `this nginx has no brotli module (${OPTIONAL_MODULES.brotli.file}; Debian: apt-get install ` +
          `${OPTIONAL_MODULES.brotli.debian}); brotli stays off`,
      );
      settled = { ...settled, enableBrotli: false };
    }
  }
  if (config.enableModsecurity && !modules.modsecurity) {
    at(
      'enable-modsecurity',
      `this nginx has no ModSecurity module (${OPTIONAL_MODULES.modsecurity.file}; Debian: apt-get install ` +
        `${OPTIONAL_MODULES.modsecurity.debian}); ModSecurity stays off`,
    );
    settled = { ...settled, enableModsecurity: false };
  }
  if (config.enableOwaspModsecurityCrs && config.enableModsecurity && modules.modsecurity && !modules.crs) {
    at(
      'enable-owasp-modsecurity-crs',
      'this machine has no OWASP Core Rule Set (Debian: apt-get install modsecurity-crs); ModSecurity runs without it',
    );
    settled = { ...settled, enableOwaspModsecurityCrs: false };
  }
  const read = (key: 'add-headers' | 'proxy-set-headers', ref: string | null) =>
    ref === null ? [] : headersOf(key, ref, configMaps, at, problems);
  let addHeaders = read('add-headers', config.addHeaders).map((h) => `${h.name}: ${h.value}`);
  if (addHeaders.length > 0) {
    if (!modules.headersMore) {
      at(
        'add-headers',
        `this nginx has no headers-more module (${OPTIONAL_MODULES.headersMore.file}; Debian: apt-get install ` +
          `${OPTIONAL_MODULES.headersMore.debian}); no header is added`,
      );
      addHeaders = [];
    }
  }
  const proxySetHeaders = read('proxy-set-headers', config.proxySetHeaders).filter((h) => {
    if (!CONTROLLER_PROXY_HEADERS.includes(h.name.toLowerCase())) return true;
    problems.push({
      kind: 'ConfigMap',
      namespace: config.proxySetHeaders!.split('/')[0]!,
      name: config.proxySetHeaders!.split('/')[1]!,
      field: `data.${h.name}`,
      message: 'the controller sets this header itself; ignored',
    });
    return false;
  });
  const clearServerHeader = !config.showServerTokens && modules.headersMore !== undefined;
  return { config: settled, modules: load, addHeaders, proxySetHeaders, clearServerHeader };
}

/** The most headers one header ConfigMap may hold. */
const MAX_HEADERS = 64;

/** headersOf reads a header ConfigMap: each entry's name and value checked, the bad ones left out with a problem. */
function headersOf(
  key: string,
  ref: string,
  configMaps: readonly ConfigMap[],
  at: (field: string, message: string) => void,
  problems: Problem[],
): Header[] {
  const [refNamespace = '', refName = ''] = ref.split('/');
  const found = configMaps.find((c) => c.metadata?.namespace === refNamespace && c.metadata?.name === refName);
  if (!found) {
    at(key, `the ConfigMap ${ref} does not exist; no header is set until it does`);
    return [];
  }
  const headers: Header[] = [];
  const data = found.data ?? {};
  const names = Object.keys(data).sort();
  for (const header of names) {
    const problem = (message: string) =>
      problems.push({ kind: 'ConfigMap', namespace: refNamespace, name: refName, field: `data.${header}`, message });
    if (headers.length >= MAX_HEADERS) {
      problem(`more than ${MAX_HEADERS} headers; the rest are ignored`);
      break;
    }
    const value = data[header];
    const bad = !checkHeaderName(header).ok
      ? `${show(header)} is not a header name (letters, digits and '-')`
      : typeof value !== 'string' || value === ''
        ? 'the value must be a non-empty string'
        : checkValue(value);
    if (bad) problem(`${bad}; ignored`);
    else headers.push({ name: header, value: value as string });
  }
  return headers;
}
