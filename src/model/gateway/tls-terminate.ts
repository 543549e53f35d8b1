/**
 * TLS listeners in Terminate mode (TLSRouteModeTerminate, TLSRouteModeMixed), served by the stream block without
 * Lua (Debian has no stream Lua module): the listen socket reads the SNI (`ssl_preread`) as for Passthrough, and a
 * name a Terminate listener serves goes to a unix socket of its own, a stream server with `ssl` and the listener's
 * certificate as a file (written 0600 with the http servers' certificates), which proxies the plain bytes to the
 * route's backend. So Passthrough and Terminate listeners share a port (SNI decides), and on the https port under
 * `--enable-ssl-passthrough` HTTPS listeners too. A certificate change is a reload (nginx.conf names the file). Pure.
 */
import { createHash } from 'node:crypto';
import type { Certificate, Problem } from '../nginx-model.js';
import type { CertificateTable } from '../tls.js';
import type { StreamListenerRoutes, StreamRoute } from './routes.js';

/** TERMINATE_SOCKET matches the internal sockets' names (`tls_<16 hex>.sock`; checkStream checks the longest fits). */
export const TERMINATE_SOCKET = /^tls_[0-9a-f]{16}\.sock$/;

/** TerminateCertificates is each Terminate listener's certificate file (absent: none resolved; its names close). */
export type TerminateCertificates = ReadonlyMap<StreamListenerRoutes, Certificate>;

/**
 * terminateCertificates finds each programmed Terminate listener's certificate: its first certificateRef the
 * CertificateTable serves (listeners.ts judged them all; a Secret gone bad since is a Problem and its names close,
 * never served with another certificate).
 */
export function terminateCertificates(
  streams: readonly StreamListenerRoutes[],
  table: CertificateTable,
  problems: Problem[],
): Map<StreamListenerRoutes, Certificate> {
  const found = new Map<StreamListenerRoutes, Certificate>();
  for (const listener of streams) {
    if (listener.protocol !== 'TLS' || listener.tlsMode !== 'Terminate') continue;
    for (const ref of listener.certificates) {
      const certificate = table.anyHost(ref.namespace, ref.name);
      if (!('error' in certificate)) {
        found.set(listener, certificate);
        break;
      }
      problems.push({
        kind: 'Gateway',
        namespace: listener.gateway.namespace,
        name: listener.gateway.name,
        field: `spec.listeners[${listener.listener}].tls.certificateRefs`,
        message: `${certificate.error}; its TLS connections are closed`,
      });
    }
  }
  return found;
}

/**
 * terminationSocket is the internal socket a Terminate listener's route hostname gets on listen socket `listen`: a
 * digest of all four, so it stays put across builds while they do (nginx keeps the socket over a reload).
 */
export function terminationSocket(
  socketDir: string,
  listen: string,
  listener: StreamListenerRoutes,
  route: StreamRoute,
): { upstream: string; socket: string } {
  const digest = createHash('sha256')
    .update(
      [listen, listener.gateway.namespace, listener.gateway.name, listener.listener, route.hostname ?? ''].join('\0'),
    )
    .digest('hex')
    .slice(0, 16);
  return { upstream: `ia_gw_tls_${digest}`, socket: `${socketDir}/tls_${digest}.sock` };
}
