// The public API, with the signed-in person's token. Every screen reads and
// writes through api(): there is no other way to the server's data.
import { freshAccessToken, refreshAccess } from './auth.js';

// ROOT is the server's root path ("/"), derived from where this file is
// served (/app/js/api.js), so nothing here hard-codes the origin.
export const ROOT = new URL('../../', import.meta.url).pathname;
export const API_BASE = ROOT + 'api/public/v1';

export class ApiError extends Error {
  constructor(status, type, detail, body) {
    super(detail || type || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.type = type;
    this.detail = detail;
    this.body = body;
  }
}

export function newIdempotencyKey() {
  return crypto.randomUUID();
}

function buildURL(path, query) {
  const u = new URL(API_BASE + path, location.origin);
  if (query) {
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || v === '') continue;
      u.searchParams.set(k, Array.isArray(v) ? v.join(',') : String(v));
    }
  }
  return u.pathname + u.search;
}

async function send(method, url, { body, headers, idempotencyKey, signal }) {
  const h = new Headers(headers || {});
  const token = await freshAccessToken();
  if (token) h.set('Authorization', 'Bearer ' + token);
  if (idempotencyKey) h.set('Idempotency-Key', idempotencyKey);
  let payload;
  if (body instanceof FormData || body instanceof Blob || typeof body === 'string') {
    payload = body;
  } else if (body !== undefined && body !== null) {
    h.set('Content-Type', 'application/json');
    payload = JSON.stringify(body);
  }
  if (!h.has('Accept')) h.set('Accept', 'application/json');
  return fetch(url, { method, headers: h, body: payload, signal, cache: 'no-store', credentials: 'omit' });
}

// api calls /api/public/v1 + path and returns the envelope's data (or the
// whole JSON when there is no envelope, or with opts.envelope: a page's
// next cursor sits beside its data; null for 204). On 401 it refreshes
// the access token once and retries; an error answer throws ApiError.
export async function api(method, path, opts = {}) {
  const url = buildURL(path, opts.query);
  let resp;
  try {
    resp = await send(method, url, opts);
    if (resp.status === 401 && await refreshAccess()) {
      resp = await send(method, url, opts);
    }
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'The server could not be reached. Check the connection and try again.', null);
  }
  if (opts.raw) return resp;
  if (resp.status === 204) return null;
  const text = await resp.text();
  let json = null;
  if (text) {
    try { json = JSON.parse(text); } catch { json = null; }
  }
  if (!resp.ok) {
    const e = (json && json.error) || {};
    throw new ApiError(resp.status, e.type || 'http_' + resp.status, e.message || resp.statusText, json);
  }
  if (json && typeof json === 'object' && 'data' in json && !opts.envelope) return json.data;
  return json;
}
