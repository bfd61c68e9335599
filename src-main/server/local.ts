/**
 * The local server as both composition roots run it: the web UI and the REST API (v0, v1, v2)
 * on one loopback port, sharing the app's multipart service, behind the app's rotatable UI token.
 */
import type { App } from '../app';
import { registerRest } from '../rest';
import { localAccess } from './access';
import { createHttpServer, type HttpServer, type HttpServerOptions } from './http';

export function startLocalServer(app: App, options: Omit<HttpServerOptions, 'plugins' | 'uiToken'>): Promise<HttpServer> {
  return createHttpServer(app, {
    ...options,
    uiToken: localAccess(app),
    plugins: [(server) => registerRest(server, app, { multipart: app.uploads.multipart })],
  });
}
