/**
 * A TCP proxy on loopback that lets the bytes going TO a real server (request bodies: a PUT to
 * WebDAV) through at a fixed rate, and counts them, so a test can watch an upload to a remote
 * account at a pace it can observe and compare what Tributary shows with what the server
 * received. Answers from the server pass at full speed, or at `answerRate` (a download at a pace
 * a test can stop mid-way), and are counted too.
 *
 * It is a small Python program because it must set SO_RCVBUF on its sockets, which Node cannot:
 * without it the kernel's autotuned receive buffer (tcp_rmem, up to 32 MB here) would swallow
 * megabytes that the proxy has not forwarded, and "received by the server" would mean nothing.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { freePort } from './util';

export interface Throttle {
  port: number;
  /** Bytes forwarded to the server so far (request heads included), as last reported (every 50 ms). */
  forwarded(): number;
  /** Bytes of answers passed back to the client so far (heads included), as last reported. */
  returned(): number;
  stop(): Promise<void>;
}

const PROXY = `
import socket, sys, threading, time
listen_port, target_port, rate, answer_rate = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
forwarded = [0]
returned = [0]
lock = threading.Lock()
def up(client, server):
    try:
        while True:
            chunk = client.recv(min(65536, max(1, rate // 20)))
            if not chunk:
                break
            server.sendall(chunk)
            with lock:
                forwarded[0] += len(chunk)
            time.sleep(len(chunk) / rate)
    except OSError:
        pass
    for s in (client, server):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def down(server, client):
    try:
        while True:
            chunk = server.recv(min(65536, max(1, answer_rate // 20)) if answer_rate else 65536)
            if not chunk:
                break
            client.sendall(chunk)
            with lock:
                returned[0] += len(chunk)
            if answer_rate:
                time.sleep(len(chunk) / answer_rate)
    except OSError:
        pass
    for s in (client, server):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def report():
    while True:
        with lock:
            n, m = forwarded[0], returned[0]
        print(n, m, flush=True)
        time.sleep(0.05)
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
ls.bind(('127.0.0.1', listen_port))
ls.listen(64)
threading.Thread(target=report, daemon=True).start()
while True:
    client, _ = ls.accept()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    try:
        server = socket.create_connection(('127.0.0.1', target_port))
    except OSError:
        client.close()  # the server is down: the client sees its connection closed, as without the proxy it would be refused
        continue
    if answer_rate:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    threading.Thread(target=up, args=(client, server), daemon=True).start()
    threading.Thread(target=down, args=(server, client), daemon=True).start()
`;

export async function startThrottle(targetPort: number, bytesPerSecond: number, options: { answerRate?: number } = {}): Promise<Throttle> {
  const port = await freePort();
  const child = spawn('python3', ['-c', PROXY, String(port), String(targetPort), String(bytesPerSecond), String(options.answerRate ?? 0)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let forwarded = 0;
  let returned = 0;
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the throttling proxy exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      [forwarded, returned] = line.split(' ').map(Number) as [number, number];
      resolve();
    });
  });
  return {
    port,
    forwarded: () => forwarded,
    returned: () => returned,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
