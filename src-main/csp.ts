/**
 * The Content-Security-Policy of the renderer, in the desktop window (app://) and in the web
 * UI (headless): our own scripts only, no eval, no plugins, no framing, no network but our own
 * origin. Two allowances exist for mail, because a message's `srcdoc` frame inherits this
 * policy on top of its own (docs/ui.md, "Message HTML"): inline styles, and http(s) images —
 * which the frame's own policy blocks until the user allows remote content for that message or
 * sender. `manifest-src 'self'` lets the web UI be installed as an app (its web app manifest).
 * src-renderer/index.html carries the same policy as a meta tag.
 */
export const RENDERER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: http: https:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
