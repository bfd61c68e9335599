/**
 * The localhost REST API (spec 1, 2 and 3): v0, v1 and v2 side by side over the same services,
 * plus the public routes `/l/{token}` (links) and `/t/o/{token}`, `/t/c/{token}` (mail tracking). Registered inside its own encapsulated fastify scope with
 * its own body handling: every body reaches the handlers as the raw stream, so an upload is
 * recognised by its metadata header whatever its Content-Type (chunked or not), and JSON is
 * parsed leniently by the routes that take it (and ignored on GET/DELETE).
 */
import { METHODS as httpMethods } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../app';
import { ServiceError } from '../errors';
import { LinksService } from '../services/links';
import type { MultipartService } from '../uploads/multipart';
import { authenticate } from './auth';
import { sendError } from '../server/errors';
import { targetPath } from '../server/guard';
import { flatQuery, expandPath, Router, sendJson, serviceHeader, VERSIONS, type RestDeps, type Version } from './http';
import { serveClick, serveOpen } from './email';
import { ROUTES, serveLink } from './routes';
import { TurnQueue } from './turns';

export { ApiKeysService } from '../services/api-keys';
export { LinksService } from '../services/links';

/**
 * Every method Node's HTTP parser lets through (CONNECT never reaches a route): on a path that
 * exists, a method without a handler is 405, whatever the method (docs/rest.md, Errors).
 */
const METHODS = httpMethods.filter((m) => m !== 'CONNECT');

const MEDIA_TYPE = /^\s*[\w.+-]+\/[\w.+-]+\s*(;.*)?$/;

const depsByApp = new WeakMap<App, RestDeps>();

/**
 * Costly requests (folder listings) started per event-loop turn while more wait: a few
 * milliseconds of work, the most any other request waits for them.
 */
const COSTLY_PER_TURN = 4;

export interface RestOptions {
  /** The app's MultipartService (startUploads(app).multipart), so REST and the uploader share one. */
  multipart?: MultipartService;
}

/**
 * The REST services of an app (one per app, so Settings and the CLI share them with the routes).
 * Options only count on the first call for an app.
 */
export function restServices(app: App, options: RestOptions = {}): RestDeps {
  let deps = depsByApp.get(app);
  if (!deps) {
    const apiKeys = app.apiKeys;
    deps = { app, apiKeys, links: new LinksService(app.db), multipart: options.multipart ?? app.uploads.multipart };
    depsByApp.set(app, deps);
    // Every account gets its bearer token when it is connected, however it was connected.
    apiKeys.issueMissingBearerTokens();
    app.events.on('accounts.changed', () => apiKeys.issueMissingBearerTokens());
  }
  return deps;
}

export async function registerRest(server: FastifyInstance, app: App, options: RestOptions = {}): Promise<void> {
  const deps = restServices(app, options);
  // fastify routes only the methods it was told of; the others (PROPFIND, …) may carry a body.
  for (const m of METHODS) if (!server.supportedMethods.includes(m)) server.addHttpMethod(m, { hasBody: true });
  const router = new Router(ROUTES);
  const openapi = openApiDocument();
  const costly = new TurnQueue(COSTLY_PER_TURN);

  for (const version of VERSIONS) {
    await server.register(
      async (scope) => {
        scope.removeAllContentTypeParsers();
        scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
        scope.setErrorHandler((error, _req, reply) => sendError(reply, error));
        scope.addHook('onRequest', async (req) => {
          // Uploads are recognised by their metadata header whatever their Content-Type, even one
          // fastify cannot parse (it would answer 415 before our handler runs).
          const type = req.headers['content-type'];
          if (type !== undefined && (serviceHeader(req, 'metadata') !== undefined || !MEDIA_TYPE.test(type))) req.headers['content-type'] = 'application/octet-stream';
        });
        scope.setNotFoundHandler((req, reply) => sendError(reply, new ServiceError('not_found', `No route for ${req.method} ${targetPath(req.url)}.`)));
        const handle = (req: FastifyRequest, reply: FastifyReply) => serve(version, req, reply);
        scope.route({ method: METHODS, url: '/', handler: handle });
        scope.route({ method: METHODS, url: '/*', handler: handle });
      },
      { prefix: `/${version}` },
    );
  }

  async function serve(version: Version, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    try {
      // The path below the version, whatever the target's form: `/v2/…`, or `http://host/v2/…` as
      // a client sends it through a proxy (RFC 9112 §3.2.2; its authority passed the Host guard).
      const path = targetPath(req.url).slice(version.length + 1);
      if (version === 'v2' && req.method === 'GET' && path.replace(/\/+$/, '') === '/openapi.json') return sendJson(reply, 200, openapi);
      const match = router.match(version, req.method, path);
      if ('error' in match) {
        throw new ServiceError(match.error, match.error === 'not_found' ? `No route for ${req.method} /${version}${path}.` : `${req.method} is not allowed on /${version}${path}.`);
      }
      if (match.route.costly) await costly.enter();
      const auth = authenticate(req, deps, version);
      const result = await match.route.handler({ ...deps, version, req, reply, params: match.params, query: flatQuery(req.query), auth });
      if (result) return sendJson(reply, result.status, result.body);
      return reply;
    } catch (e) {
      return sendError(reply, e);
    }
  }

  // Public links: no credentials, the token in the URL is the capability.
  await server.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    scope.setErrorHandler((error, _req, reply) => sendError(reply, error));
    scope.get('/l/:token', async (req, reply) => {
      try {
        await serveLink({ ...deps, reply }, (req.params as { token: string }).token, flatQuery(req.query));
        return reply;
      } catch (e) {
        return sendError(reply, e);
      }
    });
    // Mail tracking (spec 2, Send `tracking`): public, the signed token is the capability.
    scope.get('/t/o/:token', async (req, reply) => {
      try {
        await serveOpen(deps, req, reply, (req.params as { token: string }).token);
        return reply;
      } catch (e) {
        return sendError(reply, e);
      }
    });
    scope.get('/t/c/:token', async (req, reply) => {
      try {
        await serveClick(deps, req, reply, (req.params as { token: string }).token);
        return reply;
      } catch (e) {
        return sendError(reply, e);
      }
    });
  });
}

/** A minimal OpenAPI 3.1 description of v2, generated from the route table. */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    if (!r.versions.includes('v2')) continue;
    const p = `/v2${expandPath(r.path, 'v2')}`.replace(/:([a-z]+)/g, '{$1}');
    const params = [...p.matchAll(/\{([a-z]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    paths[p] ??= {};
    paths[p][r.method.toLowerCase()] = {
      summary: r.summary,
      parameters: params,
      security: [{ apiKey: [] }, { bearer: [] }],
      responses: { default: { description: 'Success, or an error body {status_code, error_code, message, id}' } },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Tributary localhost API', version: 'v2' },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'APIKey <key>' },
        bearer: { type: 'http', scheme: 'bearer' },
      },
    },
    paths,
  };
}
