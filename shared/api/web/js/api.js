// The room page's calls to the API: JSON in and out, errors as ApiError.

// enc is a room id as used in API paths: it keeps its slashes up to
// three segments, the most the gateway's routes spell out; a deeper one
// (GitLab subgroups) goes percent-encoded whole, which every route takes.
export const enc = (id) => {
  const segs = id.split("/");
  return segs.length > 3 ? encodeURIComponent(id) : segs.map(encodeURIComponent).join("/");
};

// ApiError is an HTTP error answer: the server's message, status, code
// and Retry-After.
export class ApiError extends Error {
  constructor(msg, status, code, retryAfter) {
    super(msg);
    this.status = status;
    this.code = code || "";
    this.retryAfter = retryAfter || 0; // seconds, from Retry-After
  }
}

// api fetches path as JSON. Network failures reject with TypeError (or
// AbortError); HTTP errors with ApiError carrying the server's message.
export async function api(path, opts = {}, timeoutMs = 0) {
  const ctl = new AbortController();
  const timer = timeoutMs ? setTimeout(() => ctl.abort(), timeoutMs) : 0;
  try {
    const res = await fetch(path, { ...opts, signal: ctl.signal, headers: { Accept: "application/json", ...(opts.headers || {}) } });
    let body = null;
    try { body = await res.json(); } catch { /* not JSON */ }
    if (!res.ok) {
      const msg = (body && (body.message || body.error)) || `${res.status} ${res.statusText}`.trim();
      throw new ApiError(msg, res.status, body && body.code, Number(res.headers.get("Retry-After")) || 0);
    }
    return body;
  } finally {
    clearTimeout(timer);
  }
}

export const jsonPost = (method, body) => ({ method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });

// errText is what the page says of a failed call.
export const errText = (err) => err instanceof ApiError ? err.message : "Network error: could not reach the server.";

// retryDelay is the wait before retrying after err: the backoff, or
// longer when the server asks for it (Retry-After, as on 429).
export const retryDelay = (err, backoff) => Math.max(backoff, (err instanceof ApiError ? err.retryAfter : 0) * 1000);
