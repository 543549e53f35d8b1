/**
 * OPTIONAL_MODULES are the nginx modules Debian packages apart, by feature: the file under nginx's modules path
 * (src/nginx/modules.ts looks for it) and the package that installs it (named in the problem when it is missing).
 */
import type { NginxModules } from './machine-settings.js';

export const OPTIONAL_MODULES: Readonly<
  Record<Exclude<keyof NginxModules, 'crs'>, { readonly file: string; readonly debian: string }>
> = {
  headersMore: { file: 'ngx_http_headers_more_filter_module.so', debian: 'libnginx-mod-http-headers-more-filter' },
  brotli: { file: 'ngx_http_brotli_filter_module.so', debian: 'libnginx-mod-http-brotli-filter' },
  modsecurity: { file: 'ngx_http_modsecurity_module.so', debian: 'libnginx-mod-http-modsecurity' },
};

/** CRS is where Debian's modsecurity-crs puts the OWASP Core Rule Set (src/nginx/modules.ts looks for it). */
export const CRS = {
  setup: '/etc/modsecurity/crs/crs-setup.conf',
  rules: '/usr/share/modsecurity-crs/rules',
  debian: 'modsecurity-crs',
} as const;
