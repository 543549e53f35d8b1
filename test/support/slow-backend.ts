import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** SlowBackend answers after `delayMs` (per request, from the `?delay=` query when given). */
export interface SlowBackend {
  readonly port: number;
  close(): Promise<void>;
}

export async function startSlowBackend(name: string, delayMs = 0): Promise<SlowBackend> {
  const server: Server = createServer((req, res) => {
    const delay = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('delay') ?? delayMs);
    const timer = setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ backend: name, path: req.url }));
    }, delay);
    req.on('close', () => res.writableEnded || clearTimeout(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
