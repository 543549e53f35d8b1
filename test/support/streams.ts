/**
 * Long-lived connections through nginx, for the tests and benchmarks that check a change cuts none of them: a backend
 * that streams a chunk every 50 ms, never ending, to a plain request and, after an Upgrade, as WebSocket text frames;
 * and clients that count what arrives.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Streamer is the backend: its port on 127.0.0.1. */
export interface Streamer {
  readonly port: number;
  close(): Promise<void>;
}

/** LongLived is one open connection: chunks counted so far, and whether it ended. */
export interface LongLived {
  chunks: number;
  ended: boolean;
  close(): void;
}

const TICK_MS = 50;
// RFC 6455's GUID, which the server's accept key is made with
const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** a server's unmasked WebSocket text frame of a short payload (under 126 bytes) */
function textFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  return Buffer.concat([Buffer.from([0x81, payload.length]), payload]);
}

/** startStreamer answers every request with a chunk every 50 ms, and every WebSocket upgrade with a frame as often. */
export async function startStreamer(address = '127.0.0.1'): Promise<Streamer> {
  const sockets = new Set<Socket>();
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const timer = setInterval(() => res.write('tick\n'), TICK_MS);
    res.on('close', () => clearInterval(timer));
  });
  server.on('upgrade', (req, socket: Socket) => {
    const key = req.headers['sec-websocket-key'];
    if (req.headers.upgrade?.toLowerCase() !== 'websocket' || typeof key !== 'string') {
      socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      return;
    }
    const accept = createHash('sha1')
      .update(key + WEBSOCKET_GUID)
      .digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`,
    );
    sockets.add(socket);
    const timer = setInterval(() => socket.write(textFrame('tick')), TICK_MS);
    socket.on('close', () => {
      clearInterval(timer);
      sockets.delete(socket);
    });
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** openStream starts one streaming request through nginx (`port`, Host `host`) and counts what arrives. */
export function openStream(port: number, host: string): Promise<LongLived> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host }, agent: false }, (res) => {
      const stream: LongLived = { chunks: 0, ended: false, close: () => req.destroy() };
      res.on('data', () => stream.chunks++);
      res.on('end', () => (stream.ended = true));
      res.on('error', () => (stream.ended = true));
      if (res.statusCode !== 200) reject(new Error(`stream answered ${res.statusCode}`));
      else resolve(stream);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * openWebSocket upgrades one request through nginx to a WebSocket (the accept key checked as a client must) and
 * counts the data that arrives after the 101.
 */
export function openWebSocket(port: number, host: string): Promise<LongLived> {
  // RFC 6455: 16 random bytes, base64
  const key = randomBytes(16).toString('base64');
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/',
      agent: false,
      headers: {
        host,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-key': key,
        'sec-websocket-version': '13',
      },
    });
    req.on('upgrade', (res, socket: Socket) => {
      const expected = createHash('sha1')
        .update(key + WEBSOCKET_GUID)
        .digest('base64');
      if (res.headers['sec-websocket-accept'] !== expected) {
        socket.destroy();
        reject(new Error('the WebSocket accept key is not the one the key makes'));
        return;
      }
      const ws: LongLived = { chunks: 0, ended: false, close: () => socket.destroy() };
      socket.on('data', () => ws.chunks++);
      socket.on('end', () => (ws.ended = true));
      socket.on('close', () => (ws.ended = true));
      socket.on('error', () => (ws.ended = true));
      resolve(ws);
    });
    req.on('response', (res) => {
      res.resume();
      reject(new Error(`the WebSocket upgrade answered ${res.statusCode}`));
    });
    req.on('error', reject);
    req.end();
  });
}
