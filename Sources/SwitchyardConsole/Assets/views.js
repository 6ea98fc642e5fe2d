// Switchyard console: the views (flags, kill switches, audit timeline, crash guard) as DOM built from state; the
// Releases view is in releases.js, the Experiments view in experiments.js.
//
// Each view is a function of the state and a few callbacks; app.js renders it again whenever the namespace
// changes. Every value from the server goes through dom.h(), so it is text, never markup.
'use strict';

(function (global) {
  const Switchyard = (global.Switchyard = global.Switchyard || {});
  const { h, percent, scopeText, isEverywhere, conditionsText, timeElement, count } = Switchyard.dom;

  /** The key (focusable element id) focus returns to after a view is rendered again. */
  const focusKey = (action, key, extra) => [action, key, extra].filter((part) => part !== undefined).join(':');

  function heading(title, namespace, state) {
    return h('div', { class: 'view-head' },
      h('h1', { tabindex: '-1', id: 'view-title' }, title, ' ', h('span', { class: 'visually-hidden' }, `in namespace ${namespace}`)),
      h('p', {}, `Namespace `, h('strong', {}, namespace), ` · version `, h('span', { id: 'namespace-version' }, String(state.version)),
        ` · reasons required: ${state.record ? reasonPolicyText(state.record.reason_policy) : '…'}`));
  }

  function reasonPolicyText(policy) {
    return { always: 'on every change', kills: 'on kills', never: 'never' }[policy] || policy;
  }

  /** The effective state of a flag for the badge: tone (on, partial, off, disabled, killed), words, exceptions. */
  function flagState(flag, killSwitches) {
    const covering = (flag.kill_switches || []).map((key) => killSwitches.get(key)).filter(Boolean);
    const exceptions = [];
    for (const kill of covering) {
      for (const entry of kill.entries || []) {
        if (!isEverywhere(entry)) exceptions.push(`Off for ${scopeText(entry)} (kill switch ${kill.key})`);
      }
    }
    for (const scope of flag.disabled_scopes || []) exceptions.push(`Disabled for ${scopeText(scope)}`);
    const killedBy = covering.filter((kill) => kill.killed_everywhere).map((kill) => kill.key);
    if (killedBy.length) {
      return { tone: 'killed', label: 'Killed', detail: `by ${killedBy.join(', ')}`, exceptions };
    }
    if (flag.type === 'experiment') {
      return { tone: 'on', label: 'Running', detail: `default variant ${flag.default_variant}`, exceptions };
    }
    if (flag.disabled) return { tone: 'disabled', label: 'Disabled', detail: 'everywhere', exceptions };
    const rules = flag.rules || [];
    if (!rules.length && flag.rollout === 10000) return { tone: 'on', label: 'On', exceptions };
    if (!rules.length && flag.rollout === 0) return { tone: 'off', label: 'Off', exceptions };
    if (!rules.length) return { tone: 'partial', label: `Partial`, detail: percent(flag.rollout), exceptions };
    return { tone: 'partial', label: 'Targeted', detail: `${rules.length} rule${rules.length === 1 ? '' : 's'}`, exceptions };
  }

  function badge(state) {
    return h('span', { class: ['badge', state.tone], dataset: { state: state.tone } },
      state.label, state.detail ? ` · ${state.detail}` : '');
  }

  function matchesFilter(flag, filter) {
    if (!filter) return true;
    const needle = filter.toLowerCase();
    return [flag.key, flag.description, flag.owner, flag.plugin_point].some((value) => value && String(value).toLowerCase().includes(needle));
  }

  function rolloutCell(flag) {
    if (flag.type === 'experiment') {
      const weights = Object.entries(flag.weights || {}).map(([variant, weight]) => `${variant} ${weight}`).join(' · ');
      return h('td', { 'data-label': 'Rollout' }, h('span', {}, `Weights: ${weights || 'none'}`));
    }
    return h('td', { 'data-label': 'Rollout' },
      h('meter', { min: '0', max: '10000', value: String(flag.rollout), 'aria-hidden': 'true' }), ' ',
      h('span', { dataset: { rollout: String(flag.rollout) } }, percent(flag.rollout)),
      h('span', { class: 'visually-hidden' }, ' default rollout'));
  }

  function rulesCell(flag) {
    const rules = flag.rules || [];
    if (!rules.length) return h('td', { 'data-label': 'Rules' }, h('span', { class: 'empty' }, 'No rules'));
    return h('td', { 'data-label': 'Rules' },
      h('ul', { class: 'plain' }, rules.map((rule, index) => {
        const outcome = flag.type === 'experiment'
          ? Object.entries(rule.weights || {}).map(([variant, weight]) => `${variant} ${weight}`).join(' · ')
          : percent(rule.rollout);
        return h('li', {}, h('span', { class: 'meta' }, `Rule ${index}${rule.name ? ` “${rule.name}”` : ''}: `),
          `${conditionsText(rule)} → ${outcome}`);
      })));
  }

  function killSwitchesCell(flag, killSwitches) {
    const keys = flag.kill_switches || [];
    if (!keys.length) return h('td', { 'data-label': 'Kill switches' }, h('span', { class: 'empty' }, 'None'));
    return h('td', { 'data-label': 'Kill switches' }, h('ul', { class: 'plain' }, keys.map((key) => {
      const kill = killSwitches.get(key);
      const killed = kill && kill.killed_everywhere;
      return h('li', {}, h('span', { class: 'key' }, key), killed ? [' ', h('span', { class: 'badge killed' }, 'killed')] : null);
    })));
  }

  function flagActions(flag, on) {
    return h('td', { 'data-label': 'Actions' }, flagButtons(flag, on));
  }

  /** A flag's buttons (Disable, Enable, Rollout…); `suffix` keeps their ids apart from the Flags table's. */
  function flagButtons(flag, on, suffix) {
    if (flag.type === 'experiment') {
      return h('p', { class: 'meta' }, 'Experiments are stopped with their kill switches; weights are changed in the flag file.');
    }
    const buttons = [];
    if (flag.disabled) {
      buttons.push(h('button', { type: 'button', class: 'small primary', id: focusKey('enable', flag.key, suffix), 'aria-label': `Enable ${flag.key}` }, 'Enable'));
    } else {
      buttons.push(h('button', { type: 'button', class: 'small', id: focusKey('disable', flag.key, suffix), 'aria-label': `Disable ${flag.key}` }, 'Disable'));
      if ((flag.disabled_scopes || []).length) {
        buttons.push(h('button', { type: 'button', class: 'small', id: focusKey('enable', flag.key, suffix), 'aria-label': `Enable ${flag.key} where it is disabled` }, 'Enable…'));
      }
    }
    buttons.push(h('button', { type: 'button', class: 'small', id: focusKey('rollout', flag.key, suffix), 'aria-label': `Change the rollout of ${flag.key}` }, 'Rollout…'));
    for (const button of buttons) {
      const [action] = button.id.split(':');
      button.addEventListener('click', () => on.action({ kind: action, key: flag.key }, button));
    }
    return h('div', { class: 'actions' }, buttons);
  }

  /** A flag's key, linking to its page. */
  function flagLink(namespace, key) {
    return h('a', { class: 'key', href: `#/${encodeURIComponent(namespace)}/flag/${encodeURIComponent(key)}`, id: focusKey('flag', key), 'aria-label': `The page of ${key}` }, key);
  }

  /**
   * Who holds a flag besides its own settings: a running (or paused, or rolled-back) release plan, the crash guard
   * (tripped or proposing), a kill switch killed everywhere. Each `{kind, tone, label, detail}`.
   */
  function holders(flag, state) {
    const held = [];
    const plan = flag.release;
    const planState = plan && plan.state;
    if (planState && ['running', 'paused', 'rolled_back'].includes(planState.status)) {
      const stages = plan.stages || [];
      const where = typeof planState.stage === 'number' && stages[planState.stage] ? `stage ${planState.stage + 1} of ${stages.length}` : 'no stage';
      const words = { running: 'release plan running', paused: 'release plan paused', rolled_back: 'release plan rolled back' }[planState.status];
      held.push({ kind: 'release', tone: planState.status === 'rolled_back' ? 'killed' : planState.status === 'paused' ? 'partial' : 'on', label: words, detail: `(${where}; a change here pauses it)` });
    }
    const overview = state.overview || {};
    const guard = overview.guard && keyed(overview.guard.switches).get(flag.key);
    if (guard && ['tripped', 'tripping', 'proposed'].includes(guard.state)) {
      held.push({ kind: 'guard', tone: 'killed', label: `crash guard: ${guard.state}`, detail: `(${Switchyard.guard ? Switchyard.guard.crashSentence(guard) : ''})` });
    } else if (guard && Switchyard.guard && Switchyard.guard.shownState(guard) === 'rising') {
      held.push({ kind: 'guard-watch', tone: 'partial', label: 'crash guard: above its bound', detail: `(${Switchyard.guard.crashSentence(guard)})` });
    }
    const kills = keyed(state.killSwitches);
    const killed = (flag.kill_switches || []).map((key) => kills.get(key)).filter((kill) => kill && kill.killed_everywhere);
    for (const kill of killed) held.push({ kind: 'kill', tone: 'killed', label: `kill switch ${kill.key}`, detail: '(killed everywhere)' });
    return held;
  }

  /** The Flags table's sessions column title: the series' span once loaded. */
  function overviewSpan(state) {
    const series = state.overview && state.overview.series;
    return series ? `Sessions (${Switchyard.charts.spanText(series)})` : 'Sessions';
  }

  /** A plugin switch's sessions per step as a sparkline (experiments: their variants are counted apart). */
  function sessionsCell(flag, state) {
    const series = state.overview && state.overview.series;
    const mine = series && flag.type !== 'experiment' ? Switchyard.charts.seriesOf(series, flag.key) : null;
    if (!mine) return h('td', { 'data-label': 'Sessions' }, h('span', { class: 'empty' }, series ? '–' : '…'));
    return h('td', { 'data-label': 'Sessions', class: 'sessions-cell' },
      Switchyard.charts.sparkline(mine.sessions, `sessions with ${flag.key}`, Switchyard.charts.spanText(series)));
  }

  /**
   * How many flags the Flags view lists at first, and how many more each "Show more" adds: a namespace of ten
   * thousand switches drawn whole took the browser some 20 seconds, again on every change it showed live.
   */
  const FLAG_PAGE = 200;

  /** The flags of a namespace with their state, rollout, rules and kill switches, and the actions on them. */
  function flagsView(state, on) {
    const killSwitches = keyed(state.killSwitches);
    const visible = state.flags.filter((flag) => matchesFilter(flag, state.filter));
    // Every visible flag's state, for the counts; the rows are drawn for the first page(s) of them.
    const states = visible.map((flag) => flagState(flag, killSwitches));
    const counts = {
      killed: states.filter((status) => status.tone === 'killed').length,
      disabled: states.filter((status) => status.tone === 'disabled').length,
    };
    const shown = visible.slice(0, Math.max(FLAG_PAGE, state.flagLimit || 0));
    const rows = shown.map((flag, index) => {
      const flagStatus = states[index];
      const meta = [flag.type === 'experiment' ? `experiment (${flag.value_type})` : 'plugin switch'];
      if (flag.owner) meta.push(`owner ${flag.owner}`);
      if (flag.plugin_point) meta.push(`plugin point ${flag.plugin_point}`);
      // A flag that splits units (an experiment, a switch at a partial rollout) links to its results.
      const experiment = Switchyard.experiments && Switchyard.experiments.experimentOf(flag)
        ? h('a', {
          href: `#/${encodeURIComponent(state.namespace)}/experiments/${encodeURIComponent(flag.key)}`, class: 'experiment-link',
          id: focusKey('experiment', flag.key), 'aria-label': `Experiment results of ${flag.key}`,
        }, 'Experiment results') : null;
      const held = holders(flag, state);
      return h('tr', { dataset: { flag: flag.key, held: held.map((holder) => holder.kind).join(' ') } },
        h('td', { 'data-label': 'Flag' },
          flagLink(state.namespace, flag.key),
          flag.description ? h('p', { class: 'description' }, flag.description) : null,
          h('p', { class: 'meta' }, meta.join(' · '), experiment ? [' · ', experiment] : null)),
        h('td', { 'data-label': 'State' }, badge(flagStatus),
          held.length ? h('ul', { class: 'plain held-by' }, held.map((holder) => h('li', {},
            h('span', { class: ['badge', holder.tone], dataset: { holder: holder.kind } }, holder.label), ' ', h('span', { class: 'meta' }, holder.detail)))) : null,
          flagStatus.exceptions.length ? h('ul', { class: 'plain meta' }, flagStatus.exceptions.map((text) => h('li', {}, text))) : null),
        sessionsCell(flag, state),
        rolloutCell(flag),
        rulesCell(flag),
        killSwitchesCell(flag, killSwitches),
        flagActions(flag, on));
    });

    const filter = h('input', {
      type: 'search', id: 'flag-filter', value: state.filter || '', placeholder: 'key, owner, description', autocomplete: 'off',
    });
    filter.addEventListener('input', () => on.filter(filter.value));
    const rest = visible.length - shown.length;
    let more = null;
    if (rest > 0) {
      const button = h('button', { type: 'button', id: 'show-more-flags' }, `Show ${Math.min(FLAG_PAGE, rest)} more`);
      button.addEventListener('click', () => on.moreFlags(shown.length + FLAG_PAGE, shown.length));
      more = h('p', { class: 'meta', id: 'flags-more' },
        `Showing ${shown.length} of ${visible.length} flags; filter by key, owner or description to find one. `, button);
    }

    const summary = `${visible.length} of ${state.flags.length} flags` +
      (counts.killed ? `; ${counts.killed} killed` : '') + (counts.disabled ? `; ${counts.disabled} disabled` : '') + '.';
    return h('section', { 'aria-labelledby': 'view-title' },
      heading('Flags', state.namespace, state),
      state.record && state.record.description ? h('p', { class: 'description' }, state.record.description) : null,
      h('div', { class: 'tools' }, h('div', {}, h('label', { for: 'flag-filter' }, 'Filter flags'), filter)),
      lastChange(state),
      visible.length ? h('table', { id: 'flags-table' },
        h('caption', {}, summary),
        h('thead', {}, h('tr', {}, ['Flag', 'State', overviewSpan(state), 'Rollout', 'Rules', 'Kill switches', 'Actions'].map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', {}, rows))
        : h('p', { class: 'empty' }, state.flags.length ? 'No flag matches the filter.' : 'This namespace has no flags yet.'),
      more);
  }

  /**
   * A list's members by key (the first of a key, as a scan finds it), made once per list: a WeakMap keeps it while
   * the list lives, and the console replaces lists it loads again, never edits them. The views look every flag's
   * kill switches and crash guard state up, which scanning the lists made quadratic.
   */
  const keyedLists = new WeakMap();
  function keyed(list) {
    if (!Array.isArray(list)) return new Map();
    let map = keyedLists.get(list);
    if (!map) {
      map = new Map();
      for (const item of list) if (!map.has(item.key)) map.set(item.key, item);
      keyedLists.set(list, map);
    }
    return map;
  }

  /** The latest change the console saw, live. */
  function lastChange(state) {
    const change = state.recent[0];
    if (!change) return null;
    return h('p', { class: 'meta', id: 'last-change' }, 'Latest change: version ', String(change.version), ' by ',
      h('strong', {}, change.actor), ` (${change.source}) `, timeElement(change.time), ': ', change.summary);
  }

  /** Kill switches with their entries and members, and kill / revive. */
  function killSwitchesView(state, on) {
    const rows = state.killSwitches.map((kill) => {
      const scoped = (kill.entries || []).filter((entry) => !isEverywhere(entry));
      const status = kill.killed_everywhere ? { tone: 'killed', label: 'Killed everywhere' }
        : scoped.length ? { tone: 'partial', label: `Killed in ${scoped.length} scope${scoped.length === 1 ? '' : 's'}` }
          : { tone: 'on', label: 'Not killed' };
      const entries = (kill.entries || []).map((entry, index) => {
        const revive = h('button', {
          type: 'button', class: 'small', id: focusKey('revive', kill.key, index),
          'aria-label': `Revive ${kill.key} ${isEverywhere(entry) ? 'everywhere' : `for ${scopeText(entry)}`}`,
        }, 'Revive');
        revive.addEventListener('click', () => on.action({ kind: 'revive', key: kill.key, scope: entry }, revive));
        return h('li', {}, `Killed ${isEverywhere(entry) ? 'everywhere' : `for ${scopeText(entry)}`} `, revive);
      });
      const killButton = h('button', {
        type: 'button', class: 'small danger', id: focusKey('kill', kill.key), 'aria-label': `Kill ${kill.key}`,
      }, 'Kill…');
      killButton.addEventListener('click', () => on.action({ kind: 'kill', key: kill.key }, killButton));
      const members = kill.members || [];
      return h('tr', { dataset: { killSwitch: kill.key } },
        h('td', { 'data-label': 'Kill switch' }, h('span', { class: 'key' }, kill.key),
          kill.description ? h('p', { class: 'description' }, kill.description) : null),
        h('td', { 'data-label': 'State' }, h('span', { class: ['badge', status.tone], dataset: { state: status.tone } }, status.label)),
        h('td', { 'data-label': 'Entries' }, entries.length ? h('ul', { class: 'plain' }, entries) : h('span', { class: 'empty' }, 'No entries')),
        h('td', { 'data-label': 'Members' }, h('details', {},
          h('summary', {}, `${members.length} flag${members.length === 1 ? '' : 's'}`),
          h('ul', { class: 'plain' }, members.map((member) => h('li', { class: 'key' }, member))))),
        h('td', { 'data-label': 'Actions' }, h('div', { class: 'actions' }, killButton)));
    });
    return h('section', { 'aria-labelledby': 'view-title' },
      heading('Kill switches', state.namespace, state),
      h('p', { class: 'help' }, 'A kill entry with no scope turns every member off everywhere; an entry with cities or cohorts only for units that match it. The master kill switch covers every plugin switch and experiment: the app runs its core flow.'),
      lastChange(state),
      rows.length ? h('table', { id: 'kill-switches-table' },
        h('caption', {}, `${rows.length} kill switches`),
        h('thead', {}, h('tr', {}, ['Kill switch', 'State', 'Entries', 'Members', 'Actions'].map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', {}, rows))
        : h('p', { class: 'empty' }, 'This namespace has no kill switches.'));
  }

  /** Every leaf of a JSON value by its dotted path (`rules.0.rollout`); arrays of scalars stay whole. */
  function leaves(value, path, into) {
    if (value && typeof value === 'object' && !(Array.isArray(value) && value.every((item) => item === null || typeof item !== 'object'))) {
      for (const [key, child] of Object.entries(value)) leaves(child, path ? `${path}.${key}` : key, into);
    } else if (path) {
      into.set(path, value);
    }
    return into;
  }

  /** A value of a flag's field for people: rollouts (basis points) as percentages, lists joined, nothing as `–`. */
  function fieldText(path, value) {
    if (value === undefined || value === null) return '–';
    if (/(^|\.)rollout$/.test(path) && typeof value === 'number') return percent(value);
    if (/(^|\.)weights\.[^.]+$/.test(path) && typeof value === 'number') return String(value);
    if (Array.isArray(value)) return value.length ? value.join(', ') : 'none';
    if (typeof value === 'boolean') return value ? 'yes' : 'no';
    return String(value);
  }

  /**
   * What one change did to one object, as a table of the fields that differ (before → after, rollouts in percent,
   * the changed cells marked), with the whole objects folded away.
   */
  function changeDiff(change) {
    const before = leaves(change.before, '', new Map());
    const after = leaves(change.after, '', new Map());
    const paths = [...new Set([...before.keys(), ...after.keys()])].filter((path) => JSON.stringify(before.get(path)) !== JSON.stringify(after.get(path)));
    const what = change.before == null ? 'created' : change.after == null ? 'removed' : `${paths.length} field${paths.length === 1 ? '' : 's'} changed`;
    return h('div', { class: 'change-diff', dataset: { kind: change.kind, key: change.key } },
      h('p', { class: 'meta' }, `${change.kind} `, h('span', { class: 'key' }, change.key), `: ${what}`),
      paths.length ? h('table', { class: 'compact diff' },
        h('thead', {}, h('tr', {}, ['Field', 'Before', 'After'].map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', {}, paths.map((path) => h('tr', { dataset: { path } },
          h('th', { scope: 'row' }, h('code', {}, path)),
          h('td', { 'data-label': 'Before', class: ['before', before.has(path) ? '' : 'absent'] }, h('del', {}, fieldText(path, before.get(path)))),
          h('td', { 'data-label': 'After', class: ['after', after.has(path) ? '' : 'absent'] }, h('ins', {}, fieldText(path, after.get(path))))))))
        : null,
      h('details', { class: 'raw' }, h('summary', {}, 'As stored (JSON)'),
        h('pre', {}, `before: ${JSON.stringify(change.before, null, 2)}\nafter:  ${JSON.stringify(change.after, null, 2)}`)));
  }

  /**
   * One audit entry as a timeline item; with `on`, entries that made a version get a Revert… button. `expanded`: the
   * ids of entries whose objects are all drawn (the view's state keeps it, so a redraw keeps them drawn).
   */
  function auditItem(entry, fresh, on, expanded) {
    const guard = entry.source === 'crash-guard';
    const changes = entry.changes || [];
    return h('li', { class: [guard ? 'guard' : '', fresh ? 'fresh' : ''], dataset: { id: String(entry.id), version: String(entry.version ?? '') } },
      h('div', { class: 'entry-head' },
        h('span', { class: 'summary' }, entry.summary || entry.action),
        entry.version ? h('span', { class: 'badge' }, `v${entry.version}`) : null,
        h('span', { class: ['badge', 'source', guard ? 'guard' : ''] }, guard ? 'crash guard' : entry.source),
        h('span', {}, 'by ', h('strong', { class: 'actor' }, entry.actor)),
        timeElement(entry.time)),
      h('p', { class: 'entry-reason' }, entry.reason ? ['Reason: ', h('span', { class: 'reason' }, entry.reason)] : h('span', { class: 'empty' }, 'No reason given')),
      changes.length ? h('details', { open: changes.length === 1 && fresh !== 'closed' },
        h('summary', {}, `What changed (${changes.length})`),
        changesShown(changes, entry, expanded))
        : null,
      on && entry.version && entry.namespace ? revertButton(entry, on) : null);
  }

  /**
   * How many of a change's objects its entry draws at first: creating or applying a namespace of ten thousand
   * switches is one entry of some 12,500 objects, which drawn whole held the audit view for seconds.
   */
  const DIFF_PAGE = 200;

  /**
   * A change's diffs, the first `DIFF_PAGE` of them and a button for the rest when there are more; once asked for
   * (the entry's id added to `expanded`), every one, also when the view is drawn again. Focus goes on to the first of
   * the rest, which has an id so that a redraw keeps it there.
   */
  function changesShown(changes, entry, expanded) {
    if (changes.length <= DIFF_PAGE) return changes.map(changeDiff);
    const firstOfRest = (diff) => {
      diff.setAttribute('tabindex', '-1');
      diff.id = focusKey('diffs', String(entry.id));
      return diff;
    };
    if (expanded && expanded.has(entry.id)) {
      const all = changes.map(changeDiff);
      firstOfRest(all[DIFF_PAGE]);
      return all;
    }
    const rest = changes.length - DIFF_PAGE;
    const which = entry.version ? `version ${entry.version}` : 'this change';
    const button = h('button', { type: 'button', class: 'small', 'aria-label': `Show the other ${count(rest)} objects of ${which}` },
      `Show the other ${count(rest)}`);
    const more = h('p', { class: 'meta' }, `${count(rest)} more objects changed. `, button);
    button.addEventListener('click', () => {
      const shown = changes.slice(DIFF_PAGE).map(changeDiff);
      firstOfRest(shown[0]);
      if (expanded) expanded.add(entry.id);
      more.replaceWith(...shown);
      shown[0].focus({ preventScroll: true });
    });
    return [...changes.slice(0, DIFF_PAGE).map(changeDiff), more];
  }

  function revertButton(entry, on) {
    const button = h('button', { type: 'button', class: 'small', id: focusKey('revert', String(entry.version)), 'aria-label': `Revert version ${entry.version}: ${entry.summary}` }, 'Revert…');
    button.addEventListener('click', () => on.action({ kind: 'revert', key: String(entry.version), entry }, button));
    return h('div', { class: 'actions' }, button);
  }

  /** The audit timeline of the namespace, newest first, filterable, paged, with live additions. */
  function auditView(state, on) {
    const audit = state.audit;
    const field = (id, label, input) => h('div', {}, h('label', { for: id }, label), input);
    const flagInput = h('input', { type: 'search', id: 'audit-flag', value: audit.query.flag || '', placeholder: 'a flag key', autocomplete: 'off' });
    const actorInput = h('input', { type: 'search', id: 'audit-actor', value: audit.query.actor || '', placeholder: 'a token name', autocomplete: 'off' });
    const sourceSelect = h('select', { id: 'audit-source' },
      ['', 'console', 'cli', 'api', 'apply', 'crash-guard', 'release-plan'].map((source) =>
        h('option', { value: source, selected: (audit.query.source || '') === source }, source || 'any')));
    const apply = h('button', { type: 'submit', class: 'small' }, 'Filter');
    const form = h('form', { class: 'tools', id: 'audit-filters', role: 'search', 'aria-label': 'Filter the audit log' },
      field('audit-flag', 'Flag', flagInput), field('audit-actor', 'Actor', actorInput), field('audit-source', 'Source', sourceSelect), apply);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      on.auditQuery({ flag: flagInput.value.trim(), actor: actorInput.value.trim(), source: sourceSelect.value });
    });

    let body;
    if (audit.error) {
      body = h('p', { class: 'notice error', role: 'alert' }, audit.error);
    } else if (!audit.loaded) {
      body = h('p', { class: 'empty' }, 'Loading the audit log…');
    } else if (!audit.entries.length) {
      body = h('p', { class: 'empty' }, 'No audit entries match.');
    } else {
      body = h('ol', { class: 'timeline', id: 'audit-timeline', 'aria-label': 'Audit entries, newest first' },
        audit.entries.map((entry) => auditItem(entry, audit.fresh.has(entry.id), on, audit.expanded)));
    }
    let more = null;
    if (audit.nextCursor) {
      more = h('button', { type: 'button', id: 'audit-more' }, 'Load older entries');
      more.addEventListener('click', () => on.auditMore(more));
    }
    return h('section', { 'aria-labelledby': 'view-title' },
      heading('Audit', state.namespace, state),
      h('p', { class: 'help' }, 'Every change to this namespace: who, when, through what, why, and what it touched. New changes appear at the top as they happen.'),
      form, body, more);
  }

  /**
   * The crash guard's view: the plugin switches it turned off (from the audit log, source crash-guard), their
   * state now and the way to turn them back on, and the guard's statistics when this flagsd reports them.
   */
  function guardView(state, on) {
    const guard = state.guard;
    const flags = new Map(state.flags.map((flag) => [flag.key, flag]));
    let trips;
    if (guard.error) {
      trips = h('p', { class: 'notice error', role: 'alert' }, guard.error);
    } else if (!guard.loaded) {
      trips = h('p', { class: 'empty' }, 'Loading the crash guard\'s changes…');
    } else if (!guard.entries.length) {
      trips = h('p', { class: 'empty', id: 'guard-empty' }, 'The crash guard has not turned off any plugin switch in this namespace.');
    } else {
      trips = h('ol', { class: 'timeline', id: 'guard-timeline', 'aria-label': 'Changes by the crash guard, newest first' },
        guard.entries.map((entry) => auditItem(entry, false, undefined, guard.expanded)));
    }

    // Switches the guard touched that are still disabled (globally or in a scope): a person turns them back on.
    const touched = new Set();
    for (const entry of guard.entries || []) {
      for (const change of entry.changes || []) if (change.kind === 'flag') touched.add(change.key);
    }
    const stillOff = [...touched].map((key) => flags.get(key))
      .filter((flag) => flag && (flag.disabled || (flag.disabled_scopes || []).length));
    const offList = stillOff.length ? h('ul', { class: 'plain', id: 'guard-disabled' }, stillOff.map((flag) => {
      const button = h('button', { type: 'button', class: 'small', id: focusKey('enable', flag.key, 'guard'), 'aria-label': `Enable ${flag.key} again` }, 'Enable…');
      button.addEventListener('click', () => on.action({ kind: 'enable', key: flag.key, fromGuard: true }, button));
      const where = flag.disabled ? 'everywhere' : (flag.disabled_scopes || []).map(scopeText).join('; ');
      return h('li', {}, h('span', { class: 'key' }, flag.key), ` is disabled ${flag.disabled ? where : `for ${where}`} `, button);
    })) : h('p', { class: 'empty' }, 'No switch the crash guard turned off is still off.');

    let status;
    if (guard.status) {
      status = guard.status; // A DOM node built by a status renderer (Switchyard.guardStatus), when flagsd has one.
    } else {
      status = h('p', { class: 'empty', id: 'guard-status-unavailable' },
        'This flagsd does not report the crash guard\'s per-switch crash rates; see them with flagctl when it does.');
    }
    return h('section', { 'aria-labelledby': 'view-title' },
      heading('Crash guard', state.namespace, state),
      h('p', { class: 'help' }, 'When clients report that a plugin crashes, the crash guard disables its switch (for a city or cohort, or everywhere) and records the evidence. A switch it turned off stays off until a person turns it on again.'),
      h('h2', {}, 'Switches it turned off that are still off'), offList,
      h('h2', {}, 'What it sees now'), status,
      h('h2', {}, 'Its changes'), trips);
  }

  // The Releases view (releases.js) adds itself here, built with heading() and lastChange().
  Switchyard.views = {
    flags: flagsView, 'kill-switches': killSwitchesView, audit: auditView, guard: guardView, flagState, focusKey, heading, lastChange,
    badge, holders, flagLink, auditItem, keyed, changeDiff, fieldText, rolloutCell, rulesCell, killSwitchesCell, flagButtons, sessionsCell,
  };
})(window);
