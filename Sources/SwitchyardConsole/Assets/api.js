// Switchyard console: talking to flagsd's /v1 API.
//
// The token lives in sessionStorage only (this tab, until it closes) and travels only in the Authorization
// header of requests to this flagsd: never in a URL, a cookie, localStorage or a log line.
'use strict';

(function (global) {
  const Switchyard = (global.Switchyard = global.Switchyard || {});
  const TOKEN_KEY = 'switchyard.console.token';

  // The console is served at <flagsd>/console/, so the API is one level up (this keeps working behind a proxy
  // that mounts flagsd under a path prefix).
  const root = new URL('../', document.baseURI);

  const session = {
    get token() {
      try {
        return global.sessionStorage.getItem(TOKEN_KEY);
      } catch (error) {
        return null;
      }
    },
    set token(value) {
      global.sessionStorage.setItem(TOKEN_KEY, value);
    },
    clear() {
      try {
        global.sessionStorage.removeItem(TOKEN_KEY);
      } catch (error) {
        // Storage disabled: nothing was kept.
      }
    },
  };

  /** A failed request: the HTTP status and flagsd's problem document (RFC 9457), or a network failure (status 0). */
  class APIError extends Error {
    constructor(status, problem, headers) {
      super(problem.detail || problem.title || `flagsd answered ${status}`);
      this.name = 'APIError';
      this.status = status;
      this.problem = problem;
      this.type = typeof problem.type === 'string' ? problem.type.replace('urn:switchyard:problem:', '') : '';
      /** `[{path, message}]` for 400s: the fields at fault. */
      this.fieldErrors = Array.isArray(problem.errors) ? problem.errors : [];
      const retryAfter = headers && Number(headers.get('Retry-After'));
      this.retryAfter = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null;
    }
  }

  const segment = (value) => encodeURIComponent(value);

  /**
   * Sends a request to flagsd. Resolves to `{body, etag, status}`; rejects with an APIError (or the AbortError
   * of `options.signal`).
   *
   * options: `query` (object), `body` (JSON-encoded), `ifMatch` (an ETag), `signal`, `token` (instead of the
   * session's).
   */
  async function request(method, path, options = {}) {
    const url = new URL(path, root);
    for (const [name, value] of Object.entries(options.query || {})) {
      if (value !== null && value !== undefined && value !== '') url.searchParams.set(name, String(value));
    }
    const headers = { Accept: 'application/json, application/problem+json' };
    const token = options.token || session.token;
    if (token) headers.Authorization = `Bearer ${token}`;
    if (method !== 'GET') headers['X-Switchyard-Source'] = 'console';
    if (options.ifMatch) headers['If-Match'] = options.ifMatch;
    let body;
    if (options.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    let response;
    try {
      response = await fetch(url, {
        method, headers, body, signal: options.signal,
        cache: 'no-store', credentials: 'omit', redirect: 'error', referrerPolicy: 'no-referrer',
      });
    } catch (error) {
      if (error.name === 'AbortError') throw error;
      throw new APIError(0, {
        title: 'flagsd does not answer',
        detail: `The request to ${url.pathname} failed (${error.message}). Check that flagsd is running and reachable.`,
      });
    }
    const text = await response.text();
    let parsed = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        parsed = null;
      }
    }
    if (!response.ok) {
      const problem = parsed && typeof parsed === 'object' ? parsed
        : { title: response.statusText || `HTTP ${response.status}`, detail: `flagsd answered ${response.status} ${response.statusText}.` };
      throw new APIError(response.status, problem, response.headers);
    }
    return { body: parsed, etag: response.headers.get('ETag'), status: response.status };
  }

  const ns = (namespace) => `v1/namespaces/${segment(namespace)}`;

  const api = {
    root,
    session,
    APIError,
    request,

    namespaces: (options) => request('GET', 'v1/namespaces', options),
    namespace: (namespace, options) => request('GET', ns(namespace), options),
    flags: (namespace, options) => request('GET', `${ns(namespace)}/flags`, options),
    killSwitches: (namespace, options) => request('GET', `${ns(namespace)}/kill-switches`, options),
    /** The change log after a version; with `wait`, held until there is one (long-poll). */
    changes: (namespace, after, wait, options = {}) =>
      request('GET', `${ns(namespace)}/changes`, { ...options, query: { after, wait } }),
    audit: (query, options = {}) => request('GET', 'v1/audit', { ...options, query }),
    /** The crash guard's view of every plugin switch, its budget and proposals (editors and admins). */
    guard: (namespace, options) => request('GET', `${ns(namespace)}/guard`, options),
    /** Applies a crash guard proposal: the switch goes off where it says, as the caller's change. */
    applyProposal: (namespace, id, body) => request('POST', `${ns(namespace)}/guard/proposals/${segment(String(id))}/apply`, { body }),
    /** Dismisses a crash guard proposal, with the reason (required). */
    dismissProposal: (namespace, id, body) => request('POST', `${ns(namespace)}/guard/proposals/${segment(String(id))}/dismiss`, { body }),

    /** Every release plan of the namespace: its status, stage, evidence and next step, without timelines (editors and admins). */
    releases: (namespace, options) => request('GET', `${ns(namespace)}/releases`, options),
    /** One switch's release plan with its timeline, newest first (`timeline`: how many steps, at most 500). */
    release: (namespace, key, timeline, options = {}) =>
      request('GET', `${ns(namespace)}/flags/${segment(key)}/release`, { ...options, query: { timeline } }),
    /** `start`, `pause`, `resume`, `advance` or `abort` a switch's release plan, with the reason: an ordinary change. */
    releaseAction: (namespace, key, action, body, ifMatch) =>
      request('POST', `${ns(namespace)}/flags/${segment(key)}/release/${segment(action)}`, { body, ifMatch }),

    /** `confirm` or `dismiss` a release plan's proposal to roll its switch back to off, with the reason (required to dismiss). */
    releaseProposal: (namespace, key, id, verb, body) =>
      request('POST', `${ns(namespace)}/flags/${segment(key)}/release/proposals/${segment(String(id))}/${segment(verb)}`, { body }),

    /**
     * An experiment's results per metric (an experiment flag, or a plugin switch at a partial rollout): arms, the sample
     * ratio check, and per metric each arm's mean and each treatment arm's difference to the control with its course.
     */
    experiment: (namespace, key, options) => request('GET', `${ns(namespace)}/experiments/${segment(key)}`, options),

    /** Sessions and crashed sessions per step over the last `hours`, per plugin switch (or `switch`) and for the namespace. */
    series: (namespace, query = {}, options = {}) => request('GET', `${ns(namespace)}/series`, { ...options, query }),
    /** Undoes one change (a new change restoring what it touched), with the reason; refused (409) when a later change touched the same objects. */
    revert: (namespace, version, body, ifMatch) =>
      request('POST', `${ns(namespace)}/changes/${segment(String(version))}/revert`, { body, ifMatch }),

    setSwitch: (namespace, key, enable, body, ifMatch) =>
      request('POST', `${ns(namespace)}/flags/${segment(key)}/${enable ? 'enable' : 'disable'}`, { body, ifMatch }),
    setRollout: (namespace, key, body, ifMatch) =>
      request('POST', `${ns(namespace)}/flags/${segment(key)}/rollout`, { body, ifMatch }),
    kill: (namespace, key, body, ifMatch) =>
      request('POST', `${ns(namespace)}/kill-switches/${segment(key)}/kill`, { body, ifMatch }),
    revive: (namespace, key, body, ifMatch) =>
      request('POST', `${ns(namespace)}/kill-switches/${segment(key)}/revive`, { body, ifMatch }),
  };

  /**
   * Follows a namespace's change log by long-poll from `after`, calling `onChanges(changes, response)` for each
   * batch and `onStatus(state, detail)` as the connection goes `live`, `retrying` or `stopped`.
   *
   * Backs off (with jitter) after failures, honours Retry-After on 503, and stops for good on 401/403 (the token
   * was revoked) or 404 (the namespace was deleted), or when `signal` aborts. A new epoch (the namespace was
   * deleted and created again) is reported through `onEpoch`, and following stops: the caller reloads.
   */
  async function follow({ namespace, after, epoch, wait = 25, signal, onChanges, onStatus, onEpoch, onStop }) {
    let position = after;
    let failures = 0;
    const pause = (ms) => new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
    });
    onStatus('live');
    while (!signal.aborted) {
      try {
        const { body } = await api.changes(namespace, position, wait, { signal });
        if (signal.aborted) return;
        failures = 0;
        onStatus('live');
        if (epoch && body.epoch !== epoch) {
          onEpoch(body);
          return;
        }
        if (body.changes.length) {
          position = body.next_after;
          onChanges(body.changes, body);
        }
      } catch (error) {
        if (signal.aborted || error.name === 'AbortError') return;
        if (error.status === 401 || error.status === 403 || error.status === 404) {
          onStatus('stopped', error.message);
          onStop(error);
          return;
        }
        failures += 1;
        // Overloaded (503): at least Retry-After, plus up to half again; otherwise exponential, half jittered.
        const backoff = Math.min(30000, 1000 * 2 ** Math.min(failures - 1, 5));
        const wait = error.retryAfter ? error.retryAfter * 1000 * (1 + Math.random() / 2)
          : backoff / 2 + (Math.random() * backoff) / 2;
        onStatus('retrying', `${error.message} Retrying in ${Math.ceil(wait / 1000)} s.`);
        await pause(wait);
      }
    }
  }

  Switchyard.api = api;
  Switchyard.follow = follow;
})(window);
