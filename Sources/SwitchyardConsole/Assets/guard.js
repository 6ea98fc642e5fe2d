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
  const STATES = {
    tripped: ['guard', 'tripped'],
    proposed: ['killed', 'proposed: a person decides'],
    tripping: ['killed', 'tripping'],
    disabled: ['disabled', 'disabled by a person'],
    cooling_down: ['partial', 'cooling down'],
    watching: ['on', 'watching'],
    off: ['', 'not watched'],
  };
  const ORDER = Object.keys(STATES);

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
    const [tone, words] = STATES[status.state] || ['watching', status.state];
    const shortfall = Array.isArray(status.shortfall) && status.shortfall.length && status.state === 'watching'
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
    return h('tr', { dataset: { guardSwitch: status.key, state: status.state } },
      h('td', { 'data-label': 'Plugin switch' }, h('span', { class: 'key' }, status.key)),
      h('td', { 'data-label': 'State' }, h('span', { class: ['badge', tone], dataset: { state: status.state } }, words), cooling),
      h('td', { 'data-label': 'Sessions', class: 'number sessions' }, count(status.sessions)),
      h('td', { 'data-label': 'Crashes', class: 'number crashes' }, count(status.crashes)),
      h('td', { 'data-label': 'Crash rate', class: 'number crash-rate' }, rate(status.crash_rate)),
      h('td', { 'data-label': 'Lower bound', class: 'number lower-bound' }, rate(status.lower_bound)),
      h('td', { 'data-label': 'Bound', class: 'number bound' }, rate(status.bound),
        status.bound !== status.threshold ? h('span', { class: 'meta' }, ` (threshold ${rate(status.threshold)})`) : null),
      h('td', { 'data-label': 'Evidence and notes' },
        (status.open_trips || []).map(tripEvidence), scopes, spread, shortfall));
  }

  /** The statistics of every plugin switch of the namespace as a table, most urgent first, after the proposals. */
  function table(body, refresh, on) {
    const switches = [...(body.switches || [])].sort((a, b) =>
      (ORDER.indexOf(a.state) + 1 || 99) - (ORDER.indexOf(b.state) + 1 || 99) || (b.crash_rate || 0) - (a.crash_rate || 0)
      || a.key.localeCompare(b.key));
    const window = switches.length ? switches[0].window : null;
    const confidence = switches.length && switches[0].policy ? switches[0].policy.confidence / 100 : null;
    return h('div', { id: 'guard-status' },
      h('h3', {}, 'Proposals'), proposalsSection(body, on),
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
        h('tbody', {}, switches.map(row)))
        : h('p', { class: 'empty' }, 'This namespace has no plugin switches.'));
  }

  /**
   * Loads the guard's view of the namespace and returns it as a DOM node (with a Refresh button). A 401 is
   * rethrown (app.js signs out); other failures become a message in the node.
   */
  async function guardStatus(state, on) {
    const refresh = h('button', { type: 'button', class: 'small', id: 'guard-status-refresh' }, 'Refresh');
    let node;
    try {
      const { body } = await Switchyard.api.guard(state.namespace);
      node = table(body, refresh, on);
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
    });
    return node;
  }

  Switchyard.guardStatus = guardStatus;
})(window);
