/**
 * luaNginxConf is the nginx.conf of a bare nginx with Debian's Lua module and the project's Lua folder, for what runs
 * Lua modules alone (their tests, their benchmarks): the modules loaded, nginx's files in its prefix, `http` inside.
 */
import { nginxBinary } from '../../src/nginx/binary.js';
import { LUA_FOLDER } from '../../src/nginx/lua.js';
import { modulesPath } from '../../src/nginx/modules.js';

export async function luaNginxConf(http: string, options: { workers?: number; errorLevel?: string } = {}) {
  const modules = await modulesPath(nginxBinary());
  return `load_module ${modules}/ndk_http_module.so;
load_module ${modules}/ngx_http_lua_module.so;
worker_processes ${options.workers ?? 1};
pid nginx.pid;
error_log error.log ${options.errorLevel ?? 'error'};
events { worker_connections 64; }
http {
    client_body_temp_path tmp; proxy_temp_path tmp; fastcgi_temp_path tmp; uwsgi_temp_path tmp; scgi_temp_path tmp;
    access_log off;
    lua_package_path "${LUA_FOLDER}/?.lua;;";
${http}
}
`;
}
