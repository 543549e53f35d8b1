/**
 * What the controller finds on its own machine and hands the build (types only): the Lua balancer's paths, the
 * optional nginx modules, the stream block's modules and socket folder. Paths of the controller's own choosing
 * (flags, its install folder, the private config folder), never strings from Kubernetes.
 */

/**
 * LuaSettings switch nginx.conf to the Lua balancer: backends and certificates come from tables the
 * controller pushes over the control socket, so endpoint changes and renewed certificates need no reload.
 * Paths of the controller's own choosing (flags, its install folder), not Kubernetes strings.
 */
export interface LuaSettings {
  /** load_module paths, ndk first */
  readonly modules: readonly string[];
  /** lua_package_path: the project's lua/ folder, then nginx's default path */
  readonly packagePath: string;
  /** absolute path of the control socket, in the config folder */
  readonly controlSocket: string;
  /** count requests for /metrics (`--enable-metrics`): the log phase's monitor, its dict, the labels' variables */
  readonly requestMetrics: boolean;
  /**
   * routes as data (`--routes-as-data`): hosts without server-level features leave nginx.conf for one shared server
   * whose Lua router picks their paths from a pushed table (src/sync/shared-server.ts); absent or false: every host
   * keeps its own server block
   */
  readonly routesAsData?: boolean;
}

/**
 * NginxModules are the optional dynamic modules this nginx can load, each a load_module path (Debian packages them
 * apart: libnginx-mod-http-headers-more-filter gives headersMore). Found by the controller, never from Kubernetes.
 */
export interface NginxModules {
  /** ngx_http_headers_more_filter_module: the more_set_headers family snippets and add-headers use */
  readonly headersMore?: string;
  /** ngx_http_brotli_filter_module (libnginx-mod-http-brotli-filter): enable-brotli, loaded only while it is on */
  readonly brotli?: string;
  /** ngx_http_modsecurity_module (libnginx-mod-http-modsecurity): the WAF annotations, loaded only while one is on */
  readonly modsecurity?: string;
  /**
   * the OWASP Core Rule Set (Debian's modsecurity-crs): its setup file and the glob of its rule files, loaded once at
   * the http level while a location asks for it
   */
  readonly crs?: { readonly setup: string; readonly rules: string };
}

/**
 * StreamSettings are what the stream block needs from the machine: the stream module's `load_module` paths (empty
 * when nginx has it built in) and the folder of the internal unix sockets (the private config folder). Paths of the
 * controller's own choosing, not Kubernetes strings.
 */
export interface StreamSettings {
  readonly modules: readonly string[];
  readonly socketDir: string;
}
