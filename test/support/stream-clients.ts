/**
 * TCP and UDP on loopback for the stream tests (test/controller/stream.test.ts, gateway-l4.test.ts): a client that
 * talks to one of nginx's stream ports, one that sends a datagram, and a UDP echo pod.
 */
import { createSocket } from 'node:dgram';
import { connect, type Socket } from 'node:net';

/**
 * talk connects to nginx's `port` on 127.0.0.1, sends `lines`, and reads until `want` characters arrived or the text
 * matches `want`, the connection ended or `timeoutMs` passed. A connection error rejects, unless `closedIsAnswer`: then
 * what came so far is the answer (nginx closing a connection it has nowhere to send).
 */
export function talk(
  port: number,
  lines: string | readonly string[],
  want: number | RegExp,
  options: { readonly timeoutMs?: number; readonly closedIsAnswer?: boolean } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ host: '127.0.0.1', port });
    let got = '';
    const done = () => (socket.destroy(), resolve(got));
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      got += chunk;
      if (typeof want === 'number' ? got.length >= want : want.test(got)) done();
    });
    socket.on('end', done);
    socket.on('close', done);
    socket.on('error', (error) => (options.closedIsAnswer ? done() : reject(error)));
    socket.setTimeout(options.timeoutMs ?? 5_000, done);
    socket.on('connect', () => {
      for (const line of typeof lines === 'string' ? [lines] : lines) socket.write(line);
    });
  });
}

/** datagram sends one datagram to nginx's UDP `port` and resolves with the reply; none within `timeoutMs` rejects. */
export function datagram(port: number, text: string, timeoutMs = 3_000): Promise<string> {
  const client = createSocket('udp4');
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => (client.close(), reject(new Error(`no UDP reply within ${timeoutMs} ms`))),
      timeoutMs,
    );
    client.on('message', (message) => {
      clearTimeout(timer);
      client.close();
      resolve(message.toString());
    });
    client.send(text, port, '127.0.0.1');
  });
}

/** startUdpEcho is a UDP echo pod on `ip`: each datagram comes back after `prefix`. */
export function startUdpEcho(ip: string, port: number, prefix: string): Promise<ReturnType<typeof createSocket>> {
  const server = createSocket('udp4');
  server.on('message', (message, from) => server.send(`${prefix}${message.toString()}`, from.port, from.address));
  return new Promise((resolve) => server.bind(port, ip, () => resolve(server)));
}
