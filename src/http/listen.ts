import type { Server } from 'node:net';

/** ListenError is a port the controller was told to listen on and cannot: the flag, the address and why. */
export class ListenError extends Error {
  override name = 'ListenError';
  constructor(
    readonly flag: string,
    readonly host: string,
    readonly port: number,
    readonly code: string | undefined,
  ) {
    const why =
      code === 'EADDRINUSE'
        ? 'the port is already in use'
        : code === 'EACCES'
          ? 'permission denied (a port below 1024 needs root or CAP_NET_BIND_SERVICE)'
          : code === 'EADDRNOTAVAIL'
            ? 'no such address on this machine'
            : `cannot listen (${code ?? 'unknown error'})`;
    super(`${flag} ${port}: ${host.includes(':') ? `[${host}]` : host}:${port}: ${why}`);
  }
}

/**
 * listenOn starts `server` listening on host:port (all addresses when host is absent) and
 * resolves once it does; a failure rejects with a ListenError naming `flag`, and leaves the
 * server closed with no listener of ours left on it.
 */
export function listenOn(
  server: Server,
  options: { readonly port: number; readonly host?: string; readonly flag: string },
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(new ListenError(options.flag, options.host ?? '0.0.0.0', options.port, error.code));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(options.port, options.host);
  });
}
