// A loopback TCP proxy in front of a real server, for the ways a network fails: a close that
// reaches the client late, and a path that goes silent without any close.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './util';

export interface TcpProxy {
  port: number;
  /** How late the server's close reaches the client (ms; 0: at once). */
  holdMs: number;
  /** Connections the server has closed so far. */
  closedByServer: number;
  /** The connections open now go silent both ways and are never closed; new ones pass. */
  cut(): void;
  stop(): Promise<void>;
}

export async function tcpProxy(target: number): Promise<TcpProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  const cutOff = new WeakSet<Socket>();
  const server: Server = createServer((client) => {
    const up = connect(target, '127.0.0.1');
    sockets.add(client).add(up);
    client.on('data', (d) => !cutOff.has(client) && up.writable && up.write(d));
    up.on('data', (d) => !cutOff.has(client) && client.writable && client.write(d));
    up.on('end', () => {
      if (cutOff.has(client)) return;
      proxy.closedByServer++;
      setTimeout(() => client.end(), proxy.holdMs);
    });
    client.on('close', () => up.destroy());
    client.on('error', () => {});
    up.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const proxy: TcpProxy = {
    port,
    holdMs: 0,
    closedByServer: 0,
    cut: () => {
      for (const s of sockets) cutOff.add(s);
    },
    stop: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
  return proxy;
}
