/**
 * The local HTTP server of both modes: the web UI (static files, the contract over a
 * WebSocket, upload and download endpoints for the browser), and whatever API plugins the
 * composition root registers (the REST API). Bound to 127.0.0.1 by default; every request
 * passes the Host guard first.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { WebSocketServer, type WebSocket } from 'ws';
import type { App } from '../app';
import type { Resource } from '../contract';
import { RENDERER_CSP } from '../csp';
import { WS_MAX_MESSAGE_BYTES, WsClientMessage, type WsServerMessage } from '../contract';
import { ServiceError, toServiceError } from '../errors';
import { newRequestId, rawErrorBody, sendError } from './errors';
import { int } from '../rest/http';
import { dispatch } from '../rpc/dispatch';
import { zipOf } from '../downloads/zip';
import { createHandlers, type Platform } from '../rpc/handlers';
import { localAccess, type UiTokenSource } from './access';
import { allowedHosts, checkHost, isSameOrigin, splitTarget, targetPath, tokenMatches } from './guard';

export interface HttpServerOptions {
  host: string;
  port: number;
  /**
   * Secret that the web UI presents (in its URL, then on every call): fixed (tests), or the
   * app's rotatable token (LocalAccess).
   */
  uiToken: string | UiTokenSource;
  /** Folder of the built renderer (out/renderer); the UI is not served without it. */
  rendererDir?: string;
  /** More routes, e.g. the REST API: each registers on the server before it listens. */
  plugins?: ((server: FastifyInstance, app: App) => Promise<void>)[];
  platform?: Partial<Platform>;
}

export interface HttpServer {
  server: FastifyInstance;
  url: string;
  port: number;
  /** The URL that opens the web UI, token included. */
  uiUrl: string;
  close(): Promise<void>;
}

/** Content-Security-Policy of the web UI: the renderer's, as in the desktop window. */
export const UI_CSP = RENDERER_CSP;

export async function createHttpServer(app: App, options: HttpServerOptions): Promise<HttpServer> {
  const hosts = allowedHosts(options.host);
  const server = Fastify({
    logger: false,
    bodyLimit: 1 << 20, // JSON bodies; file bodies are streamed and not limited here
    connectionTimeout: 120_000, // idle sockets
    requestTimeout: 0, // a 5 GB upload may take longer than any fixed limit
    keepAliveTimeout: 10_000,
    routerOptions: { maxParamLength: 10_000 }, // ids are up to 8192 characters
    genReqId: newRequestId,
    // An absolute-form target (`GET http://localhost:7780/v2/accounts`, as clients send through a
    // proxy) is routed by its path; the Host guard reads its authority from `originalUrl`.
    rewriteUrl: (req) => splitTarget(req.url ?? '/').path,
    // Node would answer a request without Host with a bare 400 of its own; the Host guard
    // below answers it with the documented body instead.
    http: { requireHostHeader: false },
    // Requests refused before any route runs (a malformed %-escape in the URL) still get the
    // documented error body.
    frameworkErrors: (error, _request, reply) => void sendError(reply, new ServiceError('bad_request', error.message)),
    // A request head over Node's limit (431) or garbage on the socket: answered before any
    // request object exists, still with the documented JSON body.
    clientErrorHandler: (error: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
      const body = JSON.stringify(rawErrorBody(status, 'bad_request', 'The request could not be read.'));
      socket.end(`HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    },
  });
  // An Expect header other than 100-continue: Node's own answer would be a bare 417.
  server.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const body = JSON.stringify(rawErrorBody(417, 'bad_request', `Expect: ${request.headers.expect} is not supported; only 100-continue is.`));
    response.writeHead(417, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' }).end(body);
  });
  server.addHook('onRequest', async (request, reply) => {
    const host = checkHost(request.raw, hosts);
    if (!host.ok) return sendError(reply, new ServiceError(host.status === 403 ? 'forbidden' : 'bad_request', host.message));
    // The host checked is the one the request is addressed to: what follows (links, URLs in
    // answers) reads it as Host, never the unchecked header an absolute-form target overrides.
    request.raw.headers.host = host.host;
  });
  server.setErrorHandler((error, _request, reply) => {
    const e = error as { statusCode?: number; code?: string; message: string };
    if (error instanceof ServiceError) return sendError(reply, error);
    if (e.statusCode === 413) return sendError(reply, new ServiceError('payload_too_large', 'The request body is too large.'));
    if (e.statusCode && e.statusCode < 500) return sendError(reply, new ServiceError('bad_request', e.message));
    return sendError(reply, error);
  });
  server.setNotFoundHandler((request, reply) => sendError(reply, new ServiceError('not_found', `No route for ${request.method} ${targetPath(request.url)}.`)));

  const platform: Platform = { mode: 'headless', version: process.env.npm_package_version ?? '0.1.0', ...options.platform };
  const handlers = createHandlers(app, platform);
  const source = options.uiToken;
  const currentToken = typeof source === 'string' ? () => source : () => source.current();
  const access = localAccess(app);
  const uiToken = (request: FastifyRequest) => {
    const q = request.query as Record<string, unknown>;
    if (!tokenMatches(request.headers['x-tributary-token'] ?? q.token, currentToken())) {
      throw new ServiceError('unauthorized', 'The web UI token is missing or wrong; open the URL Tributary printed.');
    }
  };

  // Web UI endpoints for the browser: bodies are raw file bytes of any type.
  await server.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

    scope.post('/app/upload', async (request, reply) => {
      uiToken(request);
      const q = request.query as Record<string, string | undefined>;
      const account = Number(q.account);
      const conflict = q.conflict === 'overwrite' || q.conflict === 'fail' ? q.conflict : 'rename';
      const length = request.headers['content-length'] ? Number(request.headers['content-length']) : undefined;
      const body = (request.body as Readable | undefined) ?? Readable.from([]);
      // The page that sends it shows it in Transfers, with its Cancel (which aborts the
      // request): it is not recorded here a second time. Its progress is the bytes written to
      // the backend (`uploads.progress` of the page's transfer id), not those the browser sent.
      const transfer = typeof q.transfer === 'string' && q.transfer.length <= 100 ? q.transfer : undefined;
      const meter = transfer ? app.transfers.upstreamMeter(transfer) : undefined;
      if (meter) body.once('error', (e) => meter.destroy(e));
      try {
        const resource = await app.storage.upload(account, q.parent ?? '', q.name ?? '', meter ? body.pipe(meter) : body, { conflict, size: length });
        return reply.code(201).header('Content-Type', 'application/json').send(JSON.stringify(resource));
      } catch (e) {
        if (meter) body.unpipe(meter);
        body.resume(); // drain, so the client sees our answer rather than a reset
        throw e;
      }
    });

    // One part of a web upload's multipart session (contract: uploads.begin … uploads.complete).
    scope.put('/app/upload/part', async (request, reply) => {
      uiToken(request);
      const q = request.query as Record<string, string | undefined>;
      const body = (request.body as Readable | undefined) ?? Readable.from([]);
      const length = request.headers['content-length'] ? Number(request.headers['content-length']) : undefined;
      try {
        const part = await app.uploads.multipart.putPart(int(q.account, 'account', 0, 1, Number.MAX_SAFE_INTEGER), int(q.session, 'session', 0, 1, Number.MAX_SAFE_INTEGER), int(q.part, 'part', 0, 1, 10_000), body, length);
        return reply.header('Content-Type', 'application/json').send(JSON.stringify({ part: part.partNumber, size: part.size }));
      } catch (e) {
        body.resume();
        throw e;
      }
    });
  });

  // The browser's download, by a one-use ticket (contract `files.downloadTicket`), so neither
  // the UI token nor a reusable URL lands in the browser's download history. Range for
  // resuming, with validators (ETag, Last-Modified) so that a resumed download (If-Range) never
  // splices bytes of two versions of the file; see LocalAccess.redeem for what a used ticket
  // still serves.
  server.get('/app/download/:ticket', async (request, reply) => {
    const ifRange = typeof request.headers['if-range'] === 'string' ? request.headers['if-range'] : undefined;
    let range = parseRange(request.headers.range);
    const { account, id, used } = access.redeem((request.params as { ticket: string }).ticket, { range: range !== undefined, ifRange });
    if (range) {
      // A ranged request needs the file's current version first: is the range still valid?
      const file = await app.storage.get(account, id);
      if (ifRange && ifRange !== downloadEtag(account, file) && ifRange !== httpDate(file.modified)) range = undefined;
      if (range && file.size !== null && range.start >= file.size) {
        reply.header('Content-Range', `bytes */${file.size}`);
        throw new ServiceError('range_not_satisfiable', `The file has ${file.size} bytes; the range starts at ${range.start}.`);
      }
    }
    const { resource, stream } = await app.storage.download(account, id, range);
    const size = resource.size;
    const lastModified = httpDate(resource.modified);
    const etag = downloadEtag(account, resource);
    used(etag);
    reply.header('Content-Type', resource.mimeType ?? 'application/octet-stream');
    reply.header('Content-Disposition', `attachment; filename*=UTF-8''${encodeURIComponent(resource.name)}`);
    reply.header('Accept-Ranges', 'bytes');
    reply.header('ETag', etag);
    reply.header('Cache-Control', 'no-store');
    reply.header('X-Content-Type-Options', 'nosniff');
    if (lastModified) reply.header('Last-Modified', lastModified);
    if (range && size !== null) {
      const end = Math.min(range.end ?? size - 1, size - 1);
      reply.code(206).header('Content-Range', `bytes ${range.start}-${end}/${size}`).header('Content-Length', String(end - range.start + 1));
    } else if (size !== null) {
      reply.header('Content-Length', String(size));
    }
    return reply.send(stream);
  });

  // Several files or folders as one zip stream, by a one-use ticket (contract `files.zipTicket`).
  server.get('/app/zip/:ticket', async (request, reply) => {
    const { account, ids } = access.redeemZip((request.params as { ticket: string }).ticket);
    const { name, stream } = await zipOf(app.storage, account, ids);
    reply.header('Content-Type', 'application/zip');
    reply.header('Content-Disposition', `attachment; filename*=UTF-8''${encodeURIComponent(name)}`);
    reply.header('Cache-Control', 'no-store');
    reply.header('X-Content-Type-Options', 'nosniff');
    return reply.send(stream);
  });

  for (const plugin of options.plugins ?? []) await plugin(server, app);

  if (options.rendererDir && existsSync(options.rendererDir)) {
    await server.register(fastifyStatic, {
      root: options.rendererDir,
      index: 'index.html',
      setHeaders: (res) => {
        res.setHeader('Content-Security-Policy', UI_CSP);
        res.setHeader('X-Content-Type-Options', 'nosniff');
        res.setHeader('Referrer-Policy', 'no-referrer');
      },
    });
  }

  // The contract over a WebSocket: same procedures and events as Electron's IPC. A socket's
  // errors (a frame over the size limit, invalid UTF-8, a reserved opcode or bit: ws closes the
  // socket with 1009, 1007 or 1002 and then emits `error`) end that socket, never the process.
  const wss = new WebSocketServer({ noServer: true, maxPayload: WS_MAX_MESSAGE_BYTES });
  wss.on('error', () => {});
  server.server.on('upgrade', (request, socket, head) => {
    // Node takes its own error listener off an upgraded socket: a reset must not be uncaught.
    socket.on('error', () => socket.destroy());
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    // A target URL() cannot parse ("//[", a port over 65535) would throw out of this listener.
    const url = URL.canParse(request.url ?? '/', 'http://localhost') ? new URL(request.url ?? '/', 'http://localhost') : undefined;
    if (!url) return refuse(400, 'Bad Request');
    if (url.pathname !== '/ws') return refuse(404, 'Not Found');
    const host = checkHost(request, hosts);
    if (!host.ok) return refuse(host.status, host.status === 403 ? 'Forbidden' : 'Bad Request');
    if (!isSameOrigin(request.headers.origin, host.host)) return refuse(403, 'Forbidden');
    const given = url.searchParams.get('token');
    if (!tokenMatches(given, currentToken())) return refuse(401, 'Unauthorized');
    wss.handleUpgrade(request, socket, head, (ws) => serveSocket(ws, given!));
  });

  // A socket opened with a token that has since been rotated away (here, or by the CLI in
  // another process) is closed: 4001 tells the page to get the new link.
  const stillAuthorised = (ws: WebSocket, token: string) => {
    if (tokenMatches(token, currentToken())) return true;
    ws.close(4001, 'The UI token was rotated');
    return false;
  };
  let offRotate = () => {};
  if (typeof source !== 'string') {
    // After the answer to the rotating call went out.
    offRotate = source.onRotate(() => setImmediate(() => wss.clients.forEach((ws) => stillAuthorised(ws, socketTokens.get(ws) ?? ''))));
  }
  const socketTokens = new WeakMap<WebSocket, string>();

  function serveSocket(ws: WebSocket, token: string) {
    socketTokens.set(ws, token);
    const send = (m: WsServerMessage) => ws.readyState === ws.OPEN && ws.send(JSON.stringify(m));
    const off = app.events.onAny((name, payload) => stillAuthorised(ws, token) && send({ type: 'event', name, payload }));
    ws.on('close', off);
    ws.on('error', () => ws.terminate());
    ws.on('message', async (data) => {
      if (!stillAuthorised(ws, token)) return;
      let raw: unknown;
      try {
        raw = JSON.parse(String(data));
      } catch {
        return ws.close(1007, 'Malformed message');
      }
      const message = WsClientMessage.safeParse(raw);
      if (!message.success) {
        // A call we can answer (it has an id) gets an error result; anything else ends the socket.
        const id = (raw as { id?: unknown } | null)?.id;
        if (typeof id !== 'number') return ws.close(1007, 'Malformed message');
        return send({ type: 'result', id, result: { ok: false, error: { code: 'bad_request', message: 'A call is {type: "call", id, procedure, input}.', status: 400 } } });
      }
      const { id, procedure, input } = message.data;
      const result = await dispatch(handlers, procedure, input);
      try {
        send({ type: 'result', id, result });
      } catch (e) {
        // An answer JSON cannot carry still answers.
        send({ type: 'result', id, result: { ok: false, error: { code: 'internal_error', message: toServiceError(e).message, status: 500 } } });
      }
    });
  }

  await server.listen({ host: options.host, port: options.port });
  const { port } = server.server.address() as AddressInfo;
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  const url = `http://${shownHost}:${port}`;
  // This server serves the REST API too: the UI shows its address (app.info).
  platform.apiUrl ??= url;
  return {
    server,
    url,
    port,
    get uiUrl() {
      return `${url}/?token=${currentToken()}`;
    },
    async close() {
      offRotate();
      for (const client of wss.clients) client.terminate();
      wss.close();
      await server.close();
    },
  };
}

/** A strong validator of one version of a file: its id, size and modification time. */
function downloadEtag(account: number, file: Pick<Resource, 'id' | 'size' | 'modified'>): string {
  return `"${createHash('sha256').update(`${account}\0${file.id}\0${file.size}\0${file.modified}`).digest('base64url').slice(0, 27)}"`;
}

const httpDate = (iso: string | null) => (iso ? new Date(iso).toUTCString() : null);

function parseRange(header: string | undefined): { start: number; end?: number } | undefined {
  const m = header ? /^bytes=(\d+)-(\d*)$/.exec(header) : null;
  if (!m) return undefined;
  const start = Number(m[1]);
  const end = m[2] ? Number(m[2]) : undefined;
  if (end !== undefined && end < start) throw new ServiceError('invalid_parameters', 'The requested range is empty.');
  return { start, end };
}
