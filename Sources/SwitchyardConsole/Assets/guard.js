// Switchyard console: the crash guard's statistics for the Crash guard view, from flagsd's guard API
// (GET /v1/namespaces/{ns}/guard, editors and admins): the proposals waiting for a person (past the guard's trip
// budget) with Apply… and Dismiss… buttons, the budget, and per plugin switch the sessions and crashes in the guard's
// window, the crash rate, its lower bound against the bound the guard holds it to, the units and addresses the
// crashes came from, the state, and the evidence of the trips in force. app.js calls
// Switchyard.guardStatus(state, on) when the view loads and after each change; the buttons call on.action.
'use strict';

(function (global) {
  const Switchyard = (global.Switchyard = global.Switchyard || {});
  const { h, scopeText, timeElement, rate, count } = Switchyard.dom;

  // States as flagsd names them: badge tone and words, most urgent first. `off`: its policy says enabled: false.
  // A switch the guard watches whose evidence is bad but not yet sure shows as `rising` (amber) instead: see `tone`.
  const STATES = {
    tripped: ['killed', 'tripped'],
    proposed: ['killed', 'proposed: a person decides'],
    tripping: ['killed', 'tripping'],
    disabled: ['disabled', 'disabled by a person'],
    cooling_down: ['partial', 'cooling down'],
    rising: ['partial', 'watching: above its bound, not yet sure'],
    watching: ['on', 'watching'],
    off: ['', 'not watched'],
  };
  const ORDER = Object.keys(STATES);

  const finite = (value) => typeof value === 'number' && Number.isFinite(value);

  /**
   * How many switches the table lists at first and each "Show more" adds, and how many crash-rate charts are drawn
   * (the most urgent first): a namespace of ten thousand switches drawn whole held the view for seconds.
   */
  const SWITCH_PAGE = 200;
  const CHART_LIMIT = 24;

  /**
   * What a release manager reads first about a switch's crashes, in words: how often it crashes against the sessions
   * without it, and whether the guard is sure (its lower bound above the bound) or what it still waits for. `check` is
   * the guard's (crash_rate, baseline_rate, lower_bound, bound, exceeds, shortfall, sessions).
   */
  function crashSentence(check) {
    if (!check || !check.sessions) return 'No session with it in the window yet.';
    const parts = [];
    if (finite(check.baseline_rate) && check.baseline_rate > 0 && finite(check.crash_rate)) {
      const ratio = check.crash_rate / check.baseline_rate;
      parts.push(ratio >= 1.1 ? `Crashes ${ratio.toFixed(1)}× as often as sessions without it (${rate(check.crash_rate)} against ${rate(check.baseline_rate)})`
        : ratio <= 0.9 ? `Crashes less often than sessions without it (${rate(check.crash_rate)} against ${rate(check.baseline_rate)})`
          : `Crashes about as often as sessions without it (${rate(check.crash_rate)} against ${rate(check.baseline_rate)})`);
    } else if (finite(check.crash_rate)) {
      parts.push(`Crashes in ${rate(check.crash_rate)} of its ${count(check.sessions)} sessions`);
    }
    if (check.exceeds) {
      parts.push(`sure: even its lower bound (${rate(check.lower_bound)}) is above the bound ${rate(check.bound)}`);
    } else if (finite(check.crash_rate) && check.crash_rate > check.bound) {
      // The first thing it waits for; the rest are in the row's notes.
      const waiting = Array.isArray(check.shortfall) && check.shortfall.length ? check.shortfall[0] : `its lower bound ${rate(check.lower_bound)} is still under the bound ${rate(check.bound)}`;
      parts.push(`above the bound ${rate(check.bound)} but not yet sure: ${waiting}`);
    } else {
      parts.push(`within the bound ${rate(check.bound)}`);
    }
    return `${parts.join('; ')}.`;
  }

  /**
   * The state shown: flagsd's, except that a watched switch whose crash rate is above its bound, or shown to crash
   * more than the sessions without it, is `rising` (amber, with why) before the guard is sure enough to trip.
   */
  function shownState(status) {
    if (status.state !== 'watching') return status.state;
    const above = finite(status.crash_rate) && status.crash_rate > status.bound;
    const worseThanBaseline = finite(status.baseline_difference_lower) && status.baseline_difference_lower > 0;
    return above || worseThanBaseline ? 'rising' : 'watching';
  }

  /** The evidence of one trip in force, in words, with the whole record folded away. */
  function tripEvidence(trip) {
    const evidence = trip.evidence || {};
    const where = evidence.scope_text || scopeText(trip.scope);
    return h('div', { class: 'guard-trip', dataset: { version: String(trip.version) } },
      h('p', { class: 'meta' },
        `Turned off ${where === 'everywhere' ? 'everywhere' : `for ${where}`} in version ${trip.version}, `, timeElement(trip.time), ': ',
        h('span', { class: 'evidence' }, evidenceText(evidence))),
      h('details', {},
        h('summary', {}, 'Evidence as recorded'),
        h('pre', {}, JSON.stringify(evidence, null, 2))));
  }

  /** The numbers of a trip or a proposal, in one sentence. */
  function evidenceText(evidence) {
    return `${count(evidence.crashes)} crashes in ${count(evidence.sessions)} sessions (${rate(evidence.crash_rate)}), `
      + `lower bound ${rate(evidence.lower_bound)} above the bound ${rate(evidence.bound)}`
      + (typeof evidence.baseline_rate === 'number' ? `; sessions without it crash at ${rate(evidence.baseline_rate)}` : '')
      + ((evidence.left_out || []).length ? `; in the sessions without ${evidence.left_out.join(', ')} (shown to crash)` : '')
      + (typeof evidence.units === 'number' ? `; reported by ${evidence.source === 'reporter' ? 'reporters' : 'clients'} from ${count(evidence.units)} units`
        + (typeof evidence.addresses === 'number' ? ` and ${count(evidence.addresses)} networks` : '') : '')
      + (evidence.window ? `; window ${evidence.window}` : '');
  }

  /** The proposals waiting for a person, each with Apply… and Dismiss…; and the trip budget. */
  function proposalsSection(body, on) {
    const budget = body.budget || {};
    const globalText = budget.max_trips_per_hour === 0
      ? 'The guard only proposes global disables in this namespace (max_trips_per_hour: 0).'
      : `The guard made ${count(budget.trips_last_hour)} of its ${count(budget.max_trips_per_hour)} automatic global disables of the last hour`;
    const scopedText = budget.max_scoped_trips_per_hour === 0
      ? 'it only proposes scoped disables (max_scoped_trips_per_hour: 0)'
      : `${count(budget.scoped_trips_last_hour)} of its ${count(budget.max_scoped_trips_per_hour)} scoped ones (a city or cohort)`;
    const budgetText = `${globalText}; ${scopedText}. Past them it proposes, and a person decides.`;
    const proposals = body.proposals || [];
    const items = proposals.map((proposal) => {
      const where = proposal.scope_text === 'everywhere' ? 'everywhere' : `for ${proposal.scope_text}`;
      const because = proposal.proposed_because === 'scoped_disables'
        ? 'the guard keeps as many scoped disables on this switch as its policy allows'
        : proposal.proposed_because === 'scoped_budget'
          ? 'the guard\'s budget of automatic scoped disables is spent' : 'the guard\'s budget of automatic global disables is spent';
      const buttons = [
        h('button', { type: 'button', class: 'small danger', id: `apply-proposal:${proposal.id}`, 'aria-label': `Apply proposal ${proposal.id}: turn ${proposal.switch} off ${where}` }, 'Apply…'),
        h('button', { type: 'button', class: 'small', id: `dismiss-proposal:${proposal.id}`, 'aria-label': `Dismiss proposal ${proposal.id}` }, 'Dismiss…'),
      ];
      buttons[0].addEventListener('click', () => on && on.action({ kind: 'apply-proposal', key: proposal.switch, proposal }, buttons[0]));
      buttons[1].addEventListener('click', () => on && on.action({ kind: 'dismiss-proposal', key: proposal.switch, proposal }, buttons[1]));
      return h('li', { class: 'guard-proposal', dataset: { proposal: String(proposal.id), guardSwitch: proposal.switch } },
        h('p', {}, h('strong', {}, `Proposal ${proposal.id}: `), 'turn ', h('span', { class: 'key' }, proposal.switch), ` off ${where}, proposed `,
          timeElement(proposal.time), ` because ${because}.`),
        h('p', { class: 'meta evidence' }, evidenceText(proposal.evidence || {})),
        h('div', { class: 'actions' }, buttons));
    });
    return h('div', { id: 'guard-proposals' },
      h('p', { class: 'help', id: 'guard-budget' }, budgetText),
      items.length ? h('ul', { class: 'plain', id: 'guard-proposal-list', 'aria-label': 'Proposals waiting for a person' }, items)
        : h('p', { class: 'empty', id: 'guard-no-proposals' }, 'No proposal waits for a person.'));
  }

  /** One plugin switch as a table row. */
  function row(status) {
    const shown = shownState(status);
    const [tone, words] = STATES[shown] || ['watching', status.state];
    const sentence = status.sessions ? h('p', { class: ['crash-sentence', tone === 'killed' || tone === 'partial' ? tone : ''] }, crashSentence(status)) : null;
    const shortfall = Array.isArray(status.shortfall) && status.shortfall.length && (shown === 'watching' || shown === 'rising')
      ? h('p', { class: 'meta' }, `Not tripping: ${status.shortfall.join('; ')}`) : null;
    const scopes = (status.scopes || []).length
      ? h('p', { class: 'meta' }, 'Above the bound in: ', status.scopes.map((scope) => `${scope.kind} ${scope.value} (${rate(scope.crash_rate)})`).join(', '))
      : null;
    const cooling = status.cooling_down_until ? h('p', { class: 'meta' }, 'Watched again from ', timeElement(status.cooling_down_until)) : null;
    const spread = typeof status.units === 'number' && status.crashes
      ? h('p', { class: 'meta spread' }, `Crashes from ${count(status.units)} units`
        + (typeof status.addresses === 'number' ? ` and ${count(status.addresses)} source networks` : '')
        + ` (${status.source === 'reporter' ? 'reporters\'' : 'clients\''} sessions)`
        + ((status.left_out || []).length ? `; judged without ${status.left_out.join(', ')} (shown to crash)` : ''))
      : null;
    return h('tr', { dataset: { guardSwitch: status.key, state: status.state, shown } },
      h('td', { 'data-label': 'Plugin switch' }, flagLink(status.key, 'table')),
      h('td', { 'data-label': 'State' }, h('span', { class: ['badge', tone], dataset: { state: status.state, shown } }, words), cooling),
      h('td', { 'data-label': 'Sessions', class: 'number sessions' }, count(status.sessions)),
      h('td', { 'data-label': 'Crashes', class: 'number crashes' }, count(status.crashes)),
      h('td', { 'data-label': 'Crash rate', class: 'number crash-rate' }, rate(status.crash_rate)),
      h('td', { 'data-label': 'Lower bound', class: 'number lower-bound' }, rate(status.lower_bound)),
      h('td', { 'data-label': 'Bound', class: 'number bound' }, rate(status.bound),
        status.bound !== status.threshold ? h('span', { class: 'meta' }, ` (threshold ${rate(status.threshold)})`) : null),
      h('td', { 'data-label': 'Evidence and notes' }, sentence,
        (status.open_trips || []).map(tripEvidence), scopes, spread, shortfall));
  }

  /**
   * A switch's key, linking to its page; `place` ('table' or 'chart') makes the link's id, so that focus stays on it
   * when the view is drawn again (a live change loads the guard's statistics anew).
   */
  function flagLink(key, place) {
    const namespace = Switchyard.state ? Switchyard.state.namespace : '';
    return h('a', { class: 'key', id: `guard-${place}:${key}`, href: `#/${encodeURIComponent(namespace)}/flag/${encodeURIComponent(key)}`, 'aria-label': `The page of ${key}` }, key);
  }

  /**
   * Each switch's crash rate over the series' span against the namespace's and its bound, with its trips marked;
   * the urgent first, the quiet ones (no session) left out.
   */
  function rateCharts(switches, series) {
    if (!series) return h('p', { class: 'empty', id: 'guard-charts' }, 'The crash rates over time could not be loaded.');
    const { crashRateChart, seriesOf, spanText } = Switchyard.charts;
    const shown = switches.filter((status) => {
      const mine = seriesOf(series, status.key);
      return mine && mine.sessions.some((value) => value > 0);
    });
    if (!shown.length) return h('p', { class: 'empty', id: 'guard-charts' }, `No plugin switch had a session in the last ${spanText(series)}.`);
    const untold = shown.length > CHART_LIMIT
      ? h('p', { class: 'meta', id: 'guard-charts-more' }, `The ${CHART_LIMIT} most urgent of ${count(shown.length)} switches with sessions; the table below has every switch's numbers.`)
      : null;
    return [h('div', { class: 'chart-grid', id: 'guard-charts' }, shown.slice(0, CHART_LIMIT).map((status) => {
      const shownState_ = shownState(status);
      const [tone, words] = STATES[shownState_] || ['', status.state];
      const trips = [...(status.open_trips || []), ...(status.last_trip ? [status.last_trip] : [])]
        .filter((trip, index, all) => all.findIndex((other) => other.version === trip.version) === index);
      return h('figure', { class: ['switch-chart', tone], dataset: { guardSwitch: status.key, shown: shownState_ } },
        h('figcaption', {}, flagLink(status.key, 'chart'), ' ', h('span', { class: ['badge', tone] }, words), h('br'),
          h('span', { class: 'meta' }, crashSentence(status))),
        crashRateChart(series, status.key, { bound: status.bound, trips }),
        h('details', { class: 'bounds' }, h('summary', {}, 'The bounds'),
          h('p', { class: 'meta' }, `Over the guard's window (${status.window}): ${count(status.crashes)} crashed of ${count(status.sessions)} sessions, `
            + `rate ${rate(status.crash_rate)}, one-sided lower bound ${rate(status.lower_bound)} at ${status.policy ? status.policy.confidence / 100 : '–'} % confidence `
            + `(it trips when that is above ${rate(status.bound)}); sessions without it ${rate(status.baseline_rate)}`
            + `${finite(status.baseline_difference_lower) ? `, the difference's lower bound ${((status.baseline_difference_lower) * 100).toFixed(2)} pp` : ''}. `
            + `The chart's points are per ${Math.round(series.step_seconds / 60)} min over the last ${spanText(series)}; the dashed line is every session of the namespace.`)));
    })), untold];
  }

  /**
   * The table's rows, the first `SWITCH_PAGE` (or as many as were shown before the statistics were loaded again:
   * `shown`, kept in the view's state) and a button that adds `SWITCH_PAGE` more while there are more.
   */
  function rowsShown(switches, shown) {
    const tbody = h('tbody', {}, switches.slice(0, Math.max(SWITCH_PAGE, shown.rows || 0)).map(row));
    if (switches.length <= tbody.rows.length) return [tbody, null];
    const button = h('button', { type: 'button', id: 'show-more-switches' });
    const more = h('p', { class: 'meta', id: 'guard-status-more' }, '', button);
    const describe = () => {
      const shown = tbody.rows.length;
      more.firstChild.textContent = `Showing the ${count(shown)} most urgent of ${count(switches.length)} plugin switches. `;
      button.textContent = `Show ${count(Math.min(SWITCH_PAGE, switches.length - shown))} more`;
      if (shown >= switches.length) more.remove();
    };
    button.addEventListener('click', () => {
      const first = tbody.rows.length;
      tbody.append(...switches.slice(first, first + SWITCH_PAGE).map(row));
      shown.rows = tbody.rows.length;
      describe();
      const next = tbody.rows[first] && tbody.rows[first].querySelector('a');
      if (next) next.focus({ preventScroll: true });
    });
    describe();
    return [tbody, more];
  }

  /**
   * The statistics of every plugin switch of the namespace as a table, most urgent first, after the proposals.
   * `shown` keeps how many rows the table lists across loads.
   */
  function table(body, refresh, on, series, shown) {
    const switches = [...(body.switches || [])].sort((a, b) =>
      (ORDER.indexOf(shownState(a)) + 1 || 99) - (ORDER.indexOf(shownState(b)) + 1 || 99) || (b.crash_rate || 0) - (a.crash_rate || 0)
      || a.key.localeCompare(b.key));
    const window = switches.length ? switches[0].window : null;
    const confidence = switches.length && switches[0].policy ? switches[0].policy.confidence / 100 : null;
    const [tbody, more] = rowsShown(switches, shown);
    return h('div', { id: 'guard-status' },
      h('h3', {}, 'Proposals'), proposalsSection(body, on),
      h('h3', {}, 'Crash rates over time'), rateCharts(switches, series),
      h('h3', {}, 'Per plugin switch'),
      h('p', { class: 'help' },
        `Sessions and crashes with each switch active over the guard's window${window ? ` (${window} by default)` : ''}, as of `,
        timeElement(body.time), '. The guard turns a switch off when the lower bound of its crash rate',
        confidence ? ` (Wilson score, ${confidence} % one-sided)` : '', ' is above its bound, with enough sessions and crashes. ',
        refresh),
      switches.length ? h('table', { id: 'guard-status-table' },
        h('caption', {}, `${switches.length} plugin switches`),
        h('thead', {}, h('tr', {}, ['Plugin switch', 'State', 'Sessions', 'Crashes', 'Crash rate', 'Lower bound', 'Bound', 'Evidence and notes']
          .map((title) => h('th', { scope: 'col' }, title)))),
        tbody)
        : h('p', { class: 'empty' }, 'This namespace has no plugin switches.'),
      more);
  }

  /**
   * Loads the guard's view of the namespace and returns it as a DOM node (with a Refresh button). A 401 is
   * rethrown (app.js signs out); other failures become a message in the node.
   */
  async function guardStatus(state, on) {
    const refresh = h('button', { type: 'button', class: 'small', id: 'guard-status-refresh' }, 'Refresh');
    let node;
    try {
      const [{ body }, series] = await Promise.all([
        Switchyard.api.guard(state.namespace),
        Switchyard.charts.loadSeries(state.namespace, { hours: 1 }).catch((error) => {
          if (error.status === 401) throw error;
          return null;
        }),
      ]);
      // How many rows the table lists, kept with the view's state (a namespace's guard state starts afresh).
      node = table(body, refresh, on, series, state.guard ? state.guard.shown : {});
    } catch (error) {
      if (error.status === 401) throw error;
      const why = error.status === 403
        ? 'Your token may not read the crash guard\'s statistics (editors and admins may); the changes it made are below.'
        : `Could not load the crash guard's statistics: ${error.message}`;
      node = h('div', { id: 'guard-status' }, h('p', { class: 'notice error', role: 'alert', id: 'guard-status-error' }, why), refresh);
    }
    refresh.addEventListener('click', async () => {
      refresh.disabled = true;
      let next;
      try {
        next = await guardStatus(state, on);
      } catch (error) {
        next = h('p', { class: 'notice error', role: 'alert', id: 'guard-status' }, `Could not load the crash guard's statistics: ${error.message}`);
      }
      if (state.guard) state.guard.status = next;
      node.replaceWith(next);
      // The button was replaced by its successor in the new node: focus goes on with it.
      const again = next.querySelector('#guard-status-refresh');
      if (again && document.activeElement === document.body) again.focus({ preventScroll: true });
    });
    return node;
  }

  Switchyard.guardStatus = guardStatus;
  Switchyard.guard = { crashSentence, shownState, STATES };
})(window);
