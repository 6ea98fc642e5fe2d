// Switchyard console: signing in, the namespace and view in the URL fragment (#/rider/flags), loading and live
// updates through the change log's long-poll, and every change through one confirmation dialog with a reason.
'use strict';

(function (global) {
  const { api, follow, views, dom } = global.Switchyard;
  const { h, replace, percent, parsePercent, parseList, scopeText, isEverywhere } = dom;
  const $ = (id) => document.getElementById(id);

  const VIEWS = ['flags', 'kill-switches', 'audit', 'guard', 'releases', 'experiments', 'flag'];
  const VIEW_TITLES = {
    flags: 'Flags', 'kill-switches': 'Kill switches', audit: 'Audit', guard: 'Crash guard', releases: 'Releases', experiments: 'Experiments',
    flag: 'Flag',
  };
  /** How often the Flags view and a flag's page, while shown, load their charts again (sessions move with events). */
  const OVERVIEW_REFRESH_MS = 30000;
  /** How often the Releases view, while shown, loads its evidence again (sessions move with events, not changes). */
  const RELEASES_REFRESH_MS = 30000;
  /** Likewise the Experiments view its results (units and outcomes arrive with client events). */
  const EXPERIMENTS_REFRESH_MS = 30000;

  const state = (global.Switchyard.state = {
    namespaces: [],
    namespace: null,
    view: 'flags',
    record: null,
    flags: [],
    killSwitches: [],
    version: 0,
    epoch: null,
    etag: null,
    filter: '',
    /** How many flags the Flags view lists (it adds a page at a time; see views.js). */
    flagLimit: 0,
    recent: [],
    audit: freshAudit(),
    guard: freshGuard(),
    releases: freshReleases(),
    experiments: freshExperiments(),
    overview: freshOverview(),
    flagPage: freshFlagPage(null),
    following: null,
    /** Whether a change made here is on its way, and the versions changes made here took. */
    saving: false,
    saved: new Set(),
  });

  function freshAudit() {
    return { query: {}, entries: [], nextCursor: null, loaded: false, error: null, fresh: new Set(), expanded: new Set() };
  }

  /** `shown`: how many rows the guard's table lists (guard.js); `expanded`: entries whose objects are all drawn. */
  function freshGuard() {
    return { entries: [], loaded: false, stale: false, error: null, status: null, shown: {}, expanded: new Set() };
  }

  function freshReleases() {
    return { releases: [], fetched: 0, loaded: false, stale: false, error: null };
  }

  /** The Flags view's charts (sessions per switch) and the crash guard's view of each switch, as last loaded. */
  function freshOverview() {
    return { series: null, guard: null, loaded: false };
  }

  /** A flag's page: its key and what loadFlagPage loaded for it. */
  function freshFlagPage(key) {
    return { key, loaded: false, error: null, history: [], nextCursor: null, series: null, guard: null, release: null, fetched: 0 };
  }

  /** The experiment shown (`key`, from the URL or the first of the list) and its results as last loaded. */
  function freshExperiments() {
    return { key: null, results: null, fetched: 0, loaded: false, stale: false, error: null };
  }

  // Announcements for screen readers (and a visible trace for everyone in the live status line).
  function announce(text) {
    const announcer = $('announcer');
    announcer.textContent = '';
    // A new text node after a tick makes screen readers read repeated messages too.
    setTimeout(() => { announcer.textContent = text; }, 50);
  }

  function setLiveStatus(status, detail) {
    const element = $('live-status');
    element.dataset.state = status;
    element.textContent = {
      live: 'Live',
      retrying: `Reconnecting… ${detail || ''}`.trim(),
      stopped: `Live updates stopped: ${detail || ''}`.trim(),
      idle: 'Not connected',
    }[status] || status;
  }

  // Signing in and out ---------------------------------------------------------------------------------------

  function showSignIn(message) {
    stopFollowing();
    $('session').hidden = true;
    $('view-nav').hidden = true;
    $('view').hidden = true;
    replace($('view'));
    $('sign-in').hidden = false;
    const error = $('token-error');
    error.hidden = !message;
    error.textContent = message || '';
    $('token-input').setAttribute('aria-invalid', message ? 'true' : 'false');
    document.title = 'Sign in · Switchyard console';
    $('token-input').focus();
  }

  function signOut(message) {
    api.session.clear();
    Object.assign(state, { namespaces: [], namespace: null, record: null, flags: [], killSwitches: [], recent: [],
                           audit: freshAudit(), guard: freshGuard(), releases: freshReleases(), experiments: freshExperiments(),
                           overview: freshOverview(), flagPage: freshFlagPage(null), saved: new Set() });
    showSignIn(message);
  }

  /** What a refused token means, in words. */
  function refusal(error) {
    if (error.status === 401) return 'flagsd did not accept this token (unknown, mistyped or revoked). Check it and try again.';
    if (error.status === 403) return `This token may not use the console: it needs the editor or admin role. (${error.message})`;
    return error.message;
  }

  async function signIn(token) {
    const button = $('sign-in-button');
    button.disabled = true;
    try {
      const { body } = await api.namespaces({ token });
      api.session.token = token;
      $('token-input').value = '';
      await start(body.namespaces);
    } catch (error) {
      showSignIn(refusal(error));
    } finally {
      button.disabled = false;
    }
  }

  async function start(namespaces) {
    state.namespaces = namespaces.map((namespace) => namespace.name);
    $('sign-in').hidden = true;
    $('session').hidden = false;
    $('view-nav').hidden = false;
    $('view').hidden = false;
    const picker = $('namespace-picker');
    replace(picker, state.namespaces.map((name) => h('option', { value: name }, name)));
    if (!state.namespaces.length) {
      replace($('view'), h('p', { class: 'notice' }, 'This token may not use any namespace. Ask an admin for a token that includes one (flagctl tokens create NAME --role editor --allow NAMESPACE).'));
      return;
    }
    await route(true);
  }

  // Routing: #/<namespace>/<view>, and #/<namespace>/experiments/<key> --------------------------------------------

  function parseHash() {
    const match = /^#\/([^/]*)\/?([^/]*)(?:\/([^/]*))?$/.exec(location.hash);
    if (!match) return null;
    const decode = (text) => {
      try {
        return decodeURIComponent(text || '');
      } catch (error) {
        return '';
      }
    };
    return { namespace: decode(match[1]), view: match[2], key: decode(match[3]) || null };
  }

  function hashFor(namespace, view, key) {
    return `#/${encodeURIComponent(namespace)}/${view}${key ? `/${encodeURIComponent(key)}` : ''}`;
  }

  async function route(moveFocus) {
    if (!api.session.token || !state.namespaces.length) return;
    const wanted = parseHash();
    let namespace = wanted && state.namespaces.includes(wanted.namespace) ? wanted.namespace : null;
    if (!namespace) namespace = state.namespace && state.namespaces.includes(state.namespace) ? state.namespace : state.namespaces[0];
    const view = wanted && VIEWS.includes(wanted.view) ? wanted.view : state.view || 'flags';
    const wantedKey = (view === 'experiments' || view === 'flag') && wanted && wanted.namespace === namespace ? wanted.key : null;
    const target = hashFor(namespace, view, wantedKey);
    if (location.hash !== target) {
      history.replaceState(null, '', target);
    }
    for (const link of document.querySelectorAll('#view-nav a')) {
      link.setAttribute('href', hashFor(namespace, link.dataset.view));
      if (link.dataset.view === view) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    $('namespace-picker').value = namespace;
    const namespaceChanged = namespace !== state.namespace;
    state.view = view;
    document.title = `${view === 'flag' && wantedKey ? `${wantedKey} · ` : ''}${VIEW_TITLES[view]} · ${namespace} · Switchyard console`;
    if (namespaceChanged) {
      stopFollowing();
      Object.assign(state, { namespace, record: null, flags: [], killSwitches: [], version: 0, epoch: null, etag: null, recent: [], filter: '', flagLimit: 0, saved: new Set() });
      state.audit = freshAudit();
      state.guard = freshGuard();
      state.releases = freshReleases();
      state.experiments = freshExperiments();
      state.overview = freshOverview();
      state.flagPage = freshFlagPage(null);
      replace($('view'), h('p', { class: 'empty' }, `Loading ${namespace}…`));
      try {
        await load();
      } catch (error) {
        if (error.status === 401) return signOut(refusal(error));
        replace($('view'), h('p', { class: 'notice error', role: 'alert' }, `Could not load namespace ${namespace}: ${error.message}`));
        return;
      }
      startFollowing();
    }
    if (view === 'audit' && !state.audit.loaded) loadAudit();
    if (view === 'guard' && (!state.guard.loaded || state.guard.stale)) loadGuard();
    if (view === 'releases' && (!state.releases.loaded || state.releases.stale)) loadReleases();
    if (view === 'experiments') chooseExperiment(wantedKey);
    // The charts move with events, not changes: opening a view that shows them loads them again.
    if (view === 'flags' || view === 'flag') loadOverview();
    if (view === 'flag' && state.flagPage.key !== wantedKey) {
      state.flagPage = freshFlagPage(wantedKey);
      loadFlagPage();
    }
    render();
    if (moveFocus) {
      const title = $('view-title');
      if (title) title.focus();
    }
  }

  // Loading and live updates --------------------------------------------------------------------------------

  /** Loads the namespace, its flags and kill switches at one version (retrying when a change lands between). */
  async function load() {
    const namespace = state.namespace;
    for (let attempt = 0; attempt < 4; attempt += 1) {
      const [record, flags, kills] = await Promise.all([api.namespace(namespace), api.flags(namespace), api.killSwitches(namespace)]);
      if (namespace !== state.namespace) return;
      const consistent = record.etag === flags.etag && flags.etag === kills.etag;
      if (consistent || attempt === 3) {
        state.record = record.body;
        state.flags = flags.body.flags;
        state.killSwitches = kills.body.kill_switches;
        state.version = flags.body.version;
        state.epoch = record.body.epoch;
        state.etag = flags.etag;
        return;
      }
    }
  }

  /**
   * Makes `task` (async) coalescing: a call while it runs makes it run once more after (however many calls came),
   * and every call resolves when the runs it asked for are done.
   */
  function coalescing(task) {
    let running = null;
    return () => {
      if (running) {
        running.again = true;
        return running.promise;
      }
      const run = { again: false };
      run.promise = (async () => {
        try {
          do {
            run.again = false;
            await task();
          } while (run.again);
        } finally {
          running = null;
        }
      })();
      running = run;
      return run.promise;
    };
  }

  /** Reloads after changes, coalescing the changes that arrive while a reload runs. */
  const reload = coalescing(async () => {
    try {
      await load();
      render();
    } catch (error) {
      if (error.status === 401) signOut(refusal(error));
      else announce(`Could not refresh: ${error.message}`);
    }
  });

  function startFollowing() {
    stopFollowing();
    const controller = new AbortController();
    state.following = controller;
    const namespace = state.namespace;
    follow({
      namespace,
      after: state.version,
      epoch: state.epoch,
      signal: controller.signal,
      onStatus: (status, detail) => {
        if (state.following === controller) setLiveStatus(status, detail);
      },
      onChanges: (changes) => {
        if (state.following !== controller) return;
        for (const change of changes) state.recent.unshift(change);
        state.recent.length = Math.min(state.recent.length, 20);
        // Changes made here are announced once, as saved; others as they arrive.
        const others = changes.filter((change) => !state.saved.has(change.version));
        const latest = others[others.length - 1];
        if (latest && !state.saving) announce(`Version ${latest.version}: ${latest.actor} (${latest.source}) ${latest.summary}`);
        reload();
        if (state.audit.loaded) refreshAudit();
        // A change may trip, re-enable or re-scope a switch: the crash guard's view is loaded again now when it
        // is shown, else when it is opened.
        if (state.guard.loaded) {
          if (state.view === 'guard') loadGuard();
          else state.guard.stale = true;
        }
        // Likewise a release plan's step (the runner's or a person's) or a change that pauses one.
        if (state.releases.loaded) {
          if (state.view === 'releases') loadReleases();
          else state.releases.stale = true;
        }
        // The Flags view's holders (a trip) and a flag's page (its history).
        if (state.overview.loaded) loadOverview();
        if (state.view === 'flag' && state.flagPage.key) loadFlagPage();
        // And an experiment's split (a new phase) or its metrics.
        if (state.experiments.loaded) {
          if (state.view === 'experiments') loadExperiment();
          else state.experiments.stale = true;
        }
      },
      onEpoch: () => {
        announce(`Namespace ${namespace} was deleted and created again; reloading it.`);
        state.namespace = null;
        route(false);
      },
      onStop: (error) => {
        if (error.status === 401) signOut(refusal(error));
        else if (error.status === 404) replace($('view'), h('p', { class: 'notice error', role: 'alert' }, `Namespace ${namespace} no longer exists.`));
      },
    });
  }

  function stopFollowing() {
    if (state.following) state.following.abort();
    state.following = null;
    setLiveStatus('idle');
  }

  // Audit and crash guard -------------------------------------------------------------------------------------

  async function loadAudit(cursor) {
    const audit = state.audit;
    try {
      const { body } = await api.audit({ namespace: state.namespace, limit: 50, cursor, ...audit.query });
      if (audit !== state.audit) return;
      audit.entries = cursor ? audit.entries.concat(body.entries) : body.entries;
      audit.nextCursor = body.next_cursor;
      audit.loaded = true;
      audit.error = null;
    } catch (error) {
      if (error.status === 401) return signOut(refusal(error));
      audit.error = `Could not load the audit log: ${error.message}`;
    }
    render();
  }

  /** Adds the entries newer than the newest shown (live), marking them fresh. */
  async function refreshAudit() {
    const audit = state.audit;
    try {
      const { body } = await api.audit({ namespace: state.namespace, limit: 50, ...audit.query });
      if (audit !== state.audit) return;
      const newest = audit.entries.length ? audit.entries[0].id : 0;
      const added = body.entries.filter((entry) => entry.id > newest);
      for (const entry of added) audit.fresh.add(entry.id);
      audit.entries = added.concat(audit.entries);
      audit.loaded = true;
      if (!audit.nextCursor && body.next_cursor && !newest) audit.nextCursor = body.next_cursor;
      render();
    } catch (error) {
      if (error.status === 401) signOut(refusal(error));
    }
  }

  async function loadGuard() {
    const guard = state.guard;
    try {
      const { body } = await api.audit({ namespace: state.namespace, source: 'crash-guard', limit: 50 });
      if (guard !== state.guard) return;
      guard.entries = body.entries;
      guard.loaded = true;
      guard.stale = false;
      guard.error = null;
      // The guard's statistics, when a renderer for them is installed (it needs flagsd's crash guard API).
      if (typeof global.Switchyard.guardStatus === 'function') {
        guard.status = await global.Switchyard.guardStatus(state, handlers);
      }
    } catch (error) {
      if (error.status === 401) return signOut(refusal(error));
      guard.error = `Could not load the crash guard's changes: ${error.message}`;
    }
    render();
  }

  /** Loads every release plan with its timeline; a load asked for while one runs follows it (once). */
  const loadReleases = coalescing(async () => {
    const releases = state.releases;
    try {
      const loaded = await global.Switchyard.loadReleases(state.namespace);
      if (releases !== state.releases) return;
      Object.assign(releases, { releases: loaded.releases, fetched: loaded.fetched, loaded: true, stale: false, error: null });
    } catch (error) {
      if (error.status === 401) return signOut(refusal(error));
      if (releases !== state.releases) return;
      releases.loaded = true;
      releases.error = error.status === 403
        ? `Your token may not read release plans (editors and admins may): ${error.message}`
        : `Could not load the release plans: ${error.message}`;
    }
    if (state.view === 'releases') render();
  });

  /** Loads the Flags view's sessions per switch and the crash guard's view of each (either may be refused: then none). */
  const loadOverview = coalescing(async () => {
    const overview = state.overview;
    const namespace = state.namespace;
    const quiet = (promise) => promise.catch((error) => {
      if (error.status === 401) throw error;
      return null;
    });
    try {
      const [series, guard] = await Promise.all([quiet(global.Switchyard.charts.loadSeries(namespace)), quiet(api.guard(namespace))]);
      if (overview !== state.overview) return;
      // Rendered again only when something shown moved (the series' window slides every minute, its counts with events).
      const fresh = { series, guard: guard ? guard.body : null };
      const same = overview.loaded && JSON.stringify(sameParts(fresh)) === JSON.stringify(sameParts(overview));
      Object.assign(overview, fresh, { loaded: true });
      if (same) return;
    } catch (error) {
      if (error.status === 401) return signOut(refusal(error));
    }
    if (state.view === 'flags' || state.view === 'flag') render();
  });

  /** What the Flags view shows of an overview: the series' counts and start, and the guard's switches. */
  function sameParts(overview) {
    const series = overview.series;
    const guard = overview.guard;
    return [series && series.from, series && series.series,
      guard && (guard.switches || []).map((status) => [status.key, status.state, status.sessions, status.crashes, status.bound])];
  }

  /** Loads what a flag's page shows; a load asked for while one runs follows it (once). */
  const loadFlagPage = coalescing(async () => {
    const page = state.flagPage;
    if (!page.key) return;
    try {
      const loaded = await global.Switchyard.loadFlagPage(state.namespace, page.key, state.flags.find((flag) => flag.key === page.key));
      if (page !== state.flagPage) return;
      Object.assign(page, loaded, { loaded: true, error: null });
    } catch (error) {
      if (error.status === 401) return signOut(refusal(error));
      if (page !== state.flagPage) return;
      page.loaded = true;
      page.error = `Could not load the history and charts of ${page.key}: ${error.message}`;
    }
    if (state.view === 'flag') render();
  });

  /**
   * Shows an experiment: the one the URL names, else the one shown before, else the namespace's first (the URL then
   * names it). Its results load when it is new or were loaded before a change.
   */
  function chooseExperiment(wanted) {
    const experiments = state.experiments;
    const first = global.Switchyard.experiments.experimentsOf(state.flags)[0];
    const key = wanted || experiments.key || (first ? first.key : null);
    if (!key) return;
    if (!wanted) history.replaceState(null, '', hashFor(state.namespace, 'experiments', key));
    if (key !== experiments.key) {
      state.experiments = { ...freshExperiments(), key };
      loadExperiment();
    } else if (!experiments.loaded || experiments.stale) {
      loadExperiment();
    }
  }

  /** Loads the shown experiment's results; a load asked for while one runs follows it (once). */
  const loadExperiment = coalescing(async () => {
    const experiments = state.experiments;
    const { key } = experiments;
    if (!key) return;
    try {
      const results = await global.Switchyard.loadExperiment(state.namespace, key);
      if (experiments !== state.experiments) return;
      Object.assign(experiments, { results, fetched: Date.now(), loaded: true, stale: false, error: null });
    } catch (error) {
      if (error.status === 401) return signOut(refusal(error));
      if (experiments !== state.experiments) return;
      experiments.loaded = true;
      experiments.error = error.status === 403
        ? `Your token may not read experiment results (editors and admins may): ${error.message}`
        : `Could not load the results of ${key}: ${error.message}`;
    }
    if (state.view === 'experiments') render();
  });

  // Rendering -------------------------------------------------------------------------------------------------

  const handlers = {
    action: (action, button) => (action.kind === 'revert' ? openRevert(action, button) : openChange(action, button)),
    filter: (value) => {
      state.filter = value;
      state.flagLimit = 0;
      render();
    },
    moreFlags: (limit, first) => {
      state.flagLimit = limit;
      render();
      // Keyboard users go on from the first flag just shown.
      const next = document.querySelector(`#flags-table tbody tr:nth-child(${first + 1}) a.key`);
      if (next) next.focus({ preventScroll: true });
    },
    auditQuery: (query) => {
      state.audit = freshAudit();
      state.audit.query = Object.fromEntries(Object.entries(query).filter(([, value]) => value));
      render();
      loadAudit();
    },
    auditMore: (button) => {
      button.disabled = true;
      loadAudit(state.audit.nextCursor);
    },
    releasesRefresh: (button) => {
      button.disabled = true;
      loadReleases();
    },
    experimentsRefresh: (button) => {
      button.disabled = true;
      loadExperiment();
    },
  };

  /** Renders the current view again, keeping focus (and the caret in a text field) where it was. */
  function render() {
    if (!state.namespace || !state.record) return;
    const active = document.activeElement;
    const focusID = active && active.id && $('view').contains(active) ? active.id : null;
    // When the focused button goes away (Disable became Enable, Pause… became Resume…), focus moves to its row's (or
    // release plan's) first button.
    const row = focusID && active.closest('tr[data-flag], tr[data-kill-switch], article[data-release]');
    const rowSelector = !row ? null
      : row.dataset.flag ? `tr[data-flag="${CSS.escape(row.dataset.flag)}"]`
        : row.dataset.killSwitch ? `tr[data-kill-switch="${CSS.escape(row.dataset.killSwitch)}"]`
          : `article[data-release="${CSS.escape(row.dataset.release)}"]`;
    const caret = focusID && typeof active.selectionStart === 'number' ? [active.selectionStart, active.selectionEnd] : null;
    const openDetails = [...$('view').querySelectorAll('details[open] > summary')].map((summary) => summary.textContent);
    const scroll = [global.scrollX, global.scrollY];
    replace($('view'), views[state.view](state, handlers));
    for (const summary of $('view').querySelectorAll('details > summary')) {
      if (openDetails.includes(summary.textContent)) summary.parentElement.open = true;
    }
    if (focusID && $(focusID)) {
      const element = $(focusID);
      element.focus({ preventScroll: true });
      if (caret && typeof element.setSelectionRange === 'function') element.setSelectionRange(caret[0], caret[1]);
    } else if (rowSelector) {
      const fallback = $('view').querySelector(`${rowSelector} button`);
      if (fallback) fallback.focus({ preventScroll: true });
    }
    global.scrollTo(scroll[0], scroll[1]);
  }

  // Changes: one dialog, a summary of the effect, a reason, a confirmation -------------------------------------

  let pending = null;

  function field(id, label, input, help) {
    input.id = id;
    if (help) input.setAttribute('aria-describedby', `${id}-help`);
    return h('div', { class: 'field' }, h('label', { for: id }, label), input, help ? h('p', { class: 'help', id: `${id}-help` }, help) : null);
  }

  /** "Where": everywhere, or only for some cities and cohorts (kill and disable). */
  function scopeFields(prefix, verb) {
    const everywhere = h('input', { type: 'radio', name: `${prefix}-where`, value: 'everywhere', id: `${prefix}-everywhere`, checked: true });
    const scoped = h('input', { type: 'radio', name: `${prefix}-where`, value: 'scope', id: `${prefix}-scoped` });
    const cities = h('input', { type: 'text', autocomplete: 'off', placeholder: 'lagos, nairobi' });
    const cohorts = h('input', { type: 'text', autocomplete: 'off', placeholder: 'beta' });
    const scopeInputs = h('div', { hidden: true },
      field(`${prefix}-cities`, 'Cities', cities, 'Comma-separated city ids, as the app reports them.'),
      field(`${prefix}-cohorts`, 'Cohorts', cohorts, 'A unit matches when any of its cohorts is listed.'));
    const toggle = () => { scopeInputs.hidden = !scoped.checked; };
    everywhere.addEventListener('change', toggle);
    scoped.addEventListener('change', toggle);
    const fieldset = h('fieldset', {},
      h('legend', {}, `Where to ${verb}`),
      h('div', {}, everywhere, ' ', h('label', { for: `${prefix}-everywhere` }, 'Everywhere')),
      h('div', {}, scoped, ' ', h('label', { for: `${prefix}-scoped` }, 'Only for some cities or cohorts')),
      scopeInputs);
    return {
      element: fieldset,
      /** The scope typed, or an error; null for everywhere. */
      read() {
        if (!scoped.checked) return { scope: null };
        const scope = {};
        const cityList = parseList(cities.value);
        const cohortList = parseList(cohorts.value);
        if (cityList.length) scope.cities = cityList;
        if (cohortList.length) scope.cohorts = cohortList;
        if (!cityList.length && !cohortList.length) return { error: 'Name at least one city or cohort, or choose Everywhere.', input: cities };
        return { scope };
      },
      inputs: { scope: cities, 'scope.cities': cities, 'scope.cohorts': cohorts },
    };
  }

  /**
   * What saving a change to a switch does to its release plan, said before saving: a person's change to a switch whose
   * plan runs pauses the plan (flagsd's rule); empty when it has none running.
   */
  function pausesPlan(flag) {
    const planState = flag && flag.release && flag.release.state;
    if (!planState || planState.status !== 'running') return '';
    const stages = flag.release.stages || [];
    const where = typeof planState.stage === 'number' && stages[planState.stage] ? ` at stage ${planState.stage + 1} of ${stages.length}` : '';
    return ` Its release plan is running${where}: saving this pauses the plan, and flagsd takes no step until someone resumes it from the Releases view.`;
  }

  /** Builds the dialog's contents for an action; returns {title, summary, confirm, danger, fields, submit}. */
  function describe(action) {
    const namespace = state.namespace;
    const flag = state.flags.find((candidate) => candidate.key === action.key);
    const kill = state.killSwitches.find((candidate) => candidate.key === action.key);
    const description = describeAction(action, namespace, flag, kill);
    const pause = ['disable', 'enable', 'rollout'].includes(action.kind) ? pausesPlan(flag) : '';
    if (pause) Object.assign(description, { summary: description.summary + pause, pauses: true });
    return description;
  }

  function describeAction(action, namespace, flag, kill) {
    switch (action.kind) {
      case 'disable': {
        const where = scopeFields('disable', 'disable it');
        return {
          title: `Disable ${action.key}?`,
          summary: `Turns this plugin off in namespace ${namespace}${flag && flag.plugin_point ? `; plugin point ${flag.plugin_point} then serves its next enabled plugin, or the core flow` : ''}. Clients receive the change within a second.`,
          confirm: 'Disable', danger: true, fields: [where.element], inputs: where.inputs,
          submit: (reason) => {
            const read = where.read();
            if (read.error) return read;
            const body = { reason };
            if (read.scope) body.scope = read.scope;
            return { send: (etag) => api.setSwitch(namespace, action.key, false, body, etag) };
          },
        };
      }
      case 'enable': {
        const options = [];
        if (flag && flag.disabled) options.push({ label: 'Everywhere (remove the global disable)', scope: null });
        for (const scope of (flag && flag.disabled_scopes) || []) options.push({ label: `For ${scopeText(scope)} (remove this scoped disable)`, scope });
        if (!options.length) options.push({ label: 'Everywhere', scope: null });
        const radios = options.map((option, index) => h('input', { type: 'radio', name: 'enable-which', id: `enable-which-${index}`, value: String(index), checked: index === 0 }));
        const fieldset = h('fieldset', {}, h('legend', {}, 'Which disable to remove'),
          options.map((option, index) => h('div', {}, radios[index], ' ', h('label', { for: `enable-which-${index}` }, option.label))));
        const guardNote = action.fromGuard || (state.guard.entries || []).some((entry) => (entry.changes || []).some((change) => change.key === action.key))
          ? ' The crash guard turned it off: check its evidence in the Crash guard view first.' : '';
        return {
          title: `Enable ${action.key}?`,
          summary: `Turns this plugin back on in namespace ${namespace}, as its rules and rollout say.${guardNote}`,
          confirm: 'Enable', danger: false, fields: [fieldset], inputs: { scope: radios[0] },
          submit: (reason) => {
            const chosen = options[radios.findIndex((radio) => radio.checked)];
            const body = { reason };
            if (chosen.scope) body.scope = chosen.scope;
            return { send: (etag) => api.setSwitch(namespace, action.key, true, body, etag) };
          },
        };
      }
      case 'apply-proposal': {
        const proposal = action.proposal;
        const where = proposal.scope_text === 'everywhere' ? 'everywhere' : `for ${proposal.scope_text}`;
        return {
          title: `Apply proposal ${proposal.id}: turn ${proposal.switch} off ${where}?`,
          summary: `The crash guard proposes this past its budget. Turns ${proposal.switch} off ${where} in namespace ${namespace}, as your change with the guard's evidence; it stays off until a person enables it${flag && flag.plugin_point ? `, and plugin point ${flag.plugin_point} serves its next enabled plugin, or the core flow` : ''}. Clients receive the change within a second.`,
          confirm: 'Turn off', danger: true, fields: [], inputs: {},
          submit: (reason) => ({ send: () => api.applyProposal(namespace, proposal.id, { reason }) }),
        };
      }
      case 'dismiss-proposal': {
        const proposal = action.proposal;
        const where = proposal.scope_text === 'everywhere' ? 'everywhere' : `for ${proposal.scope_text}`;
        const cooldown = proposal.evidence && proposal.evidence.policy ? proposal.evidence.policy.cooldown : 'its cool-down';
        return {
          title: `Dismiss proposal ${proposal.id}?`,
          summary: `${proposal.switch} stays on ${where}. The crash guard leaves it alone there for ${cooldown}, and proposes again only if the crashes go on; your reason goes into the audit log.`,
          confirm: 'Dismiss', danger: false, fields: [], inputs: {},
          submit: (reason) => ({
            send: async () => {
              await api.dismissProposal(namespace, proposal.id, { reason });
              return { body: { changed: false, announcement: `Dismissed proposal ${proposal.id}: ${proposal.switch} stays on ${where}.` } };
            },
          }),
        };
      }
      case 'rollout': {
        const rules = (flag && flag.rules) || [];
        const target = h('select', {},
          h('option', { value: '' }, `Default rollout (now ${percent(flag ? flag.rollout : 0)})`),
          rules.map((rule, index) => h('option', { value: String(index) },
            `Rule ${index}${rule.name ? ` “${rule.name}”` : ''}: ${dom.conditionsText(rule)} (now ${percent(rule.rollout)})`)));
        const value = h('input', { type: 'text', inputmode: 'decimal', autocomplete: 'off', value: flag ? String(flag.rollout / 100) : '' });
        target.addEventListener('change', () => {
          const rule = target.value === '' ? null : rules[Number(target.value)];
          value.value = String((rule ? rule.rollout : flag.rollout) / 100);
        });
        return {
          title: `Change the rollout of ${action.key}?`,
          summary: `Sets the share of units (by their stable bucket) that get this plugin in namespace ${namespace}. Raising a rollout only adds units.`,
          confirm: 'Set rollout', danger: false,
          fields: [field('rollout-target', 'Which rollout', target), field('rollout-value', 'Rollout (%)', value, 'From 0 to 100, at most two decimals, e.g. 12.5.')],
          inputs: { rollout: value, rule: target }, focus: value,
          submit: (reason) => {
            const parsed = parsePercent(value.value);
            if (parsed.error) return { error: parsed.error, input: value };
            const body = { rollout: parsed.basisPoints, reason };
            if (target.value !== '') body.rule = Number(target.value);
            return { send: (etag) => api.setRollout(namespace, action.key, body, etag) };
          },
        };
      }
      case 'release': {
        const plan = action.release.plan;
        const stages = plan.stages || [];
        const stage = plan.state && typeof plan.state.stage === 'number' ? plan.state.stage : null;
        const { stageOf } = global.Switchyard.releases;
        const next = stage === null ? 0 : stage + 1;
        const text = {
          start: [`Start the release of ${action.key}?`, 'Start',
            `Starts the plan at ${stageOf(plan, 0)}: the plan then owns the switch's rules and rollout in namespace ${namespace} (the first stage's replace them now), and flagsd advances it stage by stage once each stage has soaked and its sessions with the switch are shown not to crash more than those without it. Clients receive the change within a second.`],
          pause: [`Pause the release of ${action.key}?`, 'Pause',
            `Stops the plan where it is, at ${stageOf(plan, stage)}: the switch keeps its rules and rollout and flagsd takes no step until someone resumes or advances it.`],
          resume: [`Resume the release of ${action.key}?`, 'Resume',
            `Runs the plan again from ${stageOf(plan, stage === null ? 0 : stage)}: that stage's rules and rollout are put back (replacing any change made to the switch since) and its evidence is counted from now on.`],
          advance: next < stages.length
            ? [`Advance the release of ${action.key}?`, 'Advance',
              `Moves the plan to ${stageOf(plan, next)} now, whatever the evidence of the current stage says. Clients receive the change within a second.`]
            : [`Complete the release of ${action.key}?`, 'Complete',
              `Completes the plan now, at its last stage (${stageOf(plan, stages.length - 1)}), whatever its evidence says; the switch keeps that stage's rules and rollout.`],
          abort: [`Abort the release of ${action.key}?`, 'Abort',
            `Stops the plan for good; the switch keeps the rules and rollout it has now (${stageOf(plan, stage)}). It can be started again from its first stage.`],
        }[action.verb];
        return {
          title: text[0], confirm: text[1], summary: text[2], danger: action.verb === 'abort', fields: [], inputs: {},
          submit: (reason) => ({ send: (etag) => api.releaseAction(namespace, action.key, action.verb, { reason }, etag) }),
        };
      }
      case 'revert': {
        const entry = action.entry;
        const keys = [...new Set((entry.changes || []).map((change) => change.key))];
        const later = action.later || [];
        const warning = later.length
          ? h('div', { class: 'notice error', id: 'revert-later', role: 'alert' },
            h('p', {}, h('strong', {}, `Reverting version ${entry.version} would also undo ${later.length === 1 ? 'a later change' : `${later.length} later changes`} to the same objects:`)),
            h('ul', {}, later.slice(-5).map((change) => h('li', {}, `version ${change.version} by ${change.actor} (${change.source}): ${change.summary}`))),
            h('p', {}, 'Revert those first, newest first, or revert anyway (as flagctl revert --if-version does).'))
          : null;
        return {
          title: `Revert version ${entry.version}?`,
          summary: `Makes a new change in namespace ${namespace} that puts back what version ${entry.version} changed (${entry.summary}; by ${entry.actor}): `
            + `${keys.join(', ') || 'its objects'} as they were before it; objects it created are removed. `
            + 'Clients receive the change within a second.',
          confirm: later.length ? 'Revert anyway' : 'Revert', danger: true, fields: warning ? [warning] : [], inputs: {},
          submit: (reason) => ({ send: (etag) => api.revert(namespace, entry.version, { reason }, etag) }),
        };
      }
      case 'release-proposal': {
        const { proposal, release, verb } = action;
        const { stageOf } = global.Switchyard.releases;
        if (verb === 'confirm') {
          return {
            title: `Confirm proposal ${proposal.id}: turn ${action.key} off?`,
            summary: `The release plan's runner proposes rolling ${action.key} back to off in namespace ${namespace} (from ${stageOf(release.plan, proposal.stage)}) on clients' evidence alone. Confirming turns it off as your change, with the runner's evidence; the plan stays rolled back until a person resumes or aborts it. Clients receive the change within a second.`,
            confirm: 'Turn off', danger: true, fields: [], inputs: {},
            submit: (reason) => ({ send: () => api.releaseProposal(namespace, action.key, proposal.id, 'confirm', { reason }) }),
          };
        }
        return {
          title: `Dismiss proposal ${proposal.id}?`,
          summary: `${action.key} stays where it is and the stage holds; the runner does not propose it again in this stage, so a person advances, pauses or aborts the plan. Your reason goes into the audit log.`,
          confirm: 'Dismiss', danger: false, fields: [], inputs: {},
          submit: (reason) => ({
            send: async () => {
              await api.releaseProposal(namespace, action.key, proposal.id, 'dismiss', { reason });
              return { body: { changed: false, announcement: `Dismissed proposal ${proposal.id}: ${action.key} stays on.` } };
            },
          }),
        };
      }
      case 'kill': {
        const where = scopeFields('kill', 'kill');
        const members = (kill && kill.members) || [];
        return {
          title: `Kill ${action.key}?`,
          summary: `Turns off ${members.length} flag${members.length === 1 ? '' : 's'} in namespace ${namespace}${members.length ? ` (${members.slice(0, 6).join(', ')}${members.length > 6 ? ', …' : ''})` : ''}${action.key === 'master' ? '; every plugin point serves its core flow' : '; their plugin points serve another enabled plugin, or their core flow'}, for the units where you kill it. Clients receive the change within a second.`,
          confirm: 'Kill', danger: true, fields: [where.element], inputs: where.inputs,
          submit: (reason) => {
            const read = where.read();
            if (read.error) return read;
            const body = { reason };
            if (read.scope) body.scope = read.scope;
            return { send: (etag) => api.kill(namespace, action.key, body, etag) };
          },
        };
      }
      case 'revive': {
        const everywhere = isEverywhere(action.scope);
        return {
          title: `Revive ${action.key} ${everywhere ? 'everywhere' : `for ${scopeText(action.scope)}`}?`,
          summary: `Removes this kill entry in namespace ${namespace}; its members go back to their own state${everywhere ? '' : ' for those units'}.`,
          confirm: 'Revive', danger: false, fields: [], inputs: {},
          submit: (reason) => {
            const body = { reason };
            if (!everywhere) body.scope = action.scope;
            return { send: (etag) => api.revive(namespace, action.key, body, etag) };
          },
        };
      }
      default:
        throw new Error(`unknown action ${action.kind}`);
    }
  }

  /**
   * Opens the revert dialog once the later changes to the same objects are known (the change log after the version):
   * like flagctl revert, it says when reverting would undo them too, and then asks to revert anyway.
   */
  async function openRevert(action, opener) {
    const touched = new Set((action.entry.changes || []).map((change) => `${change.kind}:${change.key}`));
    let later = [];
    try {
      const { body } = await api.changes(state.namespace, action.entry.version, 0);
      later = (body.changes || []).filter((change) => (change.changes || []).some((object) => touched.has(`${object.kind}:${object.key}`)));
    } catch (error) {
      if (error.status === 401) return signOut(refusal(error));
      announce(`Could not read the changes after version ${action.entry.version}: ${error.message}`);
      return;
    }
    openChange({ ...action, later }, opener);
  }

  function openChange(action, opener) {
    const description = describe(action);
    // The change is based on what the dialog opened over: a change by anyone since then is refused (409), shown,
    // and confirmed again on purpose.
    pending = { action, description, opener, etag: state.etag };
    const dialog = $('change-dialog');
    $('change-title').textContent = description.title;
    $('change-summary').textContent = description.summary;
    $('change-summary').dataset.pausesPlan = description.pauses ? 'true' : 'false';
    replace($('change-fields'), description.fields);
    const reason = $('change-reason');
    reason.value = '';
    reason.setAttribute('aria-invalid', 'false');
    showDialogError(null);
    const confirm = $('change-confirm');
    confirm.textContent = description.confirm;
    confirm.className = description.danger ? 'danger' : 'primary';
    confirm.disabled = false;
    dialog.showModal();
    (description.focus || reason).focus();
  }

  function closeChange() {
    const dialog = $('change-dialog');
    if (dialog.open) dialog.close();
  }

  function showDialogError(message) {
    const error = $('change-error');
    error.hidden = !message;
    error.textContent = message || '';
  }

  function markInvalid(input) {
    for (const element of $('change-form').querySelectorAll('[aria-invalid="true"]')) element.setAttribute('aria-invalid', 'false');
    if (input) {
      input.setAttribute('aria-invalid', 'true');
      input.focus();
    }
  }

  async function confirmChange(event) {
    event.preventDefault();
    if (!pending) return;
    const { description } = pending;
    const reasonInput = $('change-reason');
    const reason = reasonInput.value.trim();
    if (!reason) {
      showDialogError('Give a reason: it goes into the audit log with the change.');
      markInvalid(reasonInput);
      return;
    }
    const prepared = description.submit(reason);
    if (prepared.error) {
      showDialogError(prepared.error);
      markInvalid(prepared.input);
      return;
    }
    markInvalid(null);
    const confirm = $('change-confirm');
    confirm.disabled = true;
    state.saving = true;
    try {
      const { body } = await prepared.send(pending.etag);
      state.saving = false;
      if (body.changed) state.saved.add(body.version);
      closeChange();
      if (body.changed) {
        announce(`Saved: ${body.change.summary}. Namespace ${body.namespace} is at version ${body.version}.`);
      } else if (body.announcement) {
        // An audited decision that changed no flag (a dismissed proposal): the guard's and the plans' views are loaded again.
        announce(body.announcement);
        if (state.view === 'guard') loadGuard();
        else state.guard.stale = true;
        if (state.view === 'releases') loadReleases();
        else state.releases.stale = true;
      } else {
        announce('Nothing changed: the namespace was already like that.');
      }
      await reload();
    } catch (error) {
      state.saving = false;
      if (error.status === 401) {
        closeChange();
        signOut(refusal(error));
        return;
      }
      if (error.status === 409 && error.type === 'version-conflict') {
        const problem = error.problem;
        const who = problem.changed_by ? `${problem.changed_by} changed` : 'Someone changed';
        const when = problem.changed_at ? ` at ${new Date(problem.changed_at).toLocaleTimeString()}` : '';
        const version = problem.current_version ? ` (version ${problem.current_version})` : '';
        showDialogError(`${who} ${state.namespace}${when}${version} since you opened this. The view now shows the latest state: check it and confirm again.`);
        // Confirmable again once the dialog is based on the latest state (a click before would conflict again).
        await reload();
        if (pending) pending.etag = state.etag;
        confirm.disabled = false;
        return;
      }
      confirm.disabled = false;
      const fieldError = error.fieldErrors[0];
      const input = fieldError && (description.inputs[fieldError.path] || (fieldError.path === 'reason' ? reasonInput : null));
      const detail = error.fieldErrors.length
        ? error.fieldErrors.map((problem) => `${problem.path}: ${problem.message}`).join('; ')
        : error.message;
      showDialogError(`flagsd refused the change: ${detail}`);
      markInvalid(input || null);
    }
  }

  // Wiring ------------------------------------------------------------------------------------------------------

  function wire() {
    $('sign-in-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const token = $('token-input').value.trim();
      if (!token) {
        showSignIn('Paste a token to sign in.');
        return;
      }
      signIn(token);
    });
    $('sign-out').addEventListener('click', () => signOut(null));
    $('namespace-picker').addEventListener('change', (event) => {
      location.hash = hashFor(event.target.value, state.view);
    });
    global.addEventListener('hashchange', () => {
      if (parseHash()) route(true);
    });
    $('skip-link').addEventListener('click', (event) => {
      event.preventDefault();
      const title = $('view-title') || $('sign-in-title');
      (title || $('main')).focus();
    });
    $('change-form').addEventListener('submit', confirmChange);
    // The Releases view's evidence and time in state move without changes: loaded again while the view is shown.
    setInterval(() => {
      if (state.view === 'releases' && state.releases.loaded && api.session.token && document.visibilityState === 'visible') loadReleases();
    }, RELEASES_REFRESH_MS);
    setInterval(() => {
      if (!api.session.token || document.visibilityState !== 'visible') return;
      if ((state.view === 'flags' || state.view === 'flag') && state.overview.loaded) loadOverview();
      if (state.view === 'flag' && state.flagPage.loaded) loadFlagPage();
    }, OVERVIEW_REFRESH_MS);
    setInterval(() => {
      if (state.view === 'experiments' && state.experiments.loaded && api.session.token && document.visibilityState === 'visible') loadExperiment();
    }, EXPERIMENTS_REFRESH_MS);
    $('change-cancel').addEventListener('click', closeChange);
    $('change-dialog').addEventListener('close', () => {
      const opener = pending && pending.opener;
      pending = null;
      // The opener may have been rendered again meanwhile: find it by id.
      const target = opener && (document.getElementById(opener.id) || opener);
      if (target && document.contains(target)) target.focus();
    });
  }

  async function boot() {
    wire();
    const token = api.session.token;
    if (!token) {
      showSignIn(null);
      return;
    }
    try {
      const { body } = await api.namespaces();
      await start(body.namespaces);
    } catch (error) {
      if (error.status === 401 || error.status === 403) signOut(refusal(error));
      else showSignIn(error.message);
    }
  }

  boot();
})(window);
