// Switchyard console: a flag's own page (#/<namespace>/flag/<key>). Its definition and state, who holds it (a release
// plan, the crash guard, a kill switch), its charts (sessions and crash rate against the namespace's and the guard's
// bound; a release plan's rollout over time, progress and evidence), and its history as readable diffs with Revert…
// on every change (the same dialog, reason and confirmation as every change). Like flagctl revert, the console reads the
// change log after the version first and, when a later change touched the same objects, lists it and asks to revert
// anyway; the revert is sent with If-Match on the version the dialog saw, so a change made meanwhile is never undone
// unseen (flagsd's revert itself does not look at later changes).
//
// app.js keeps the page's data in state.flagPage, loads it with Switchyard.loadFlagPage(namespace, key) when the page
// opens, after each change and every 30 s while it is shown, and renders Switchyard.views.flag(state, on).
'use strict';

(function (global) {
  const Switchyard = (global.Switchyard = global.Switchyard || {});
  const { h, timeElement } = Switchyard.dom;

  /** How many changes of the flag's history the page shows at first. */
  const HISTORY = 30;

  /**
   * Loads what a flag's page shows besides the flag itself: its history (audit entries naming it), its series over
   * the last hour, the crash guard's view of it and its release plan with timeline (plugin switches). Parts a token may
   * not read, or that do not apply, are null; a 401 rejects.
   */
  async function loadFlagPage(namespace, key, flag) {
    const quiet = (promise) => promise.catch((error) => {
      if (error.status === 401) throw error;
      return null;
    });
    const isSwitch = flag && flag.type !== 'experiment';
    const [history, series, guard, release] = await Promise.all([
      Switchyard.api.audit({ namespace, flag: key, limit: HISTORY }),
      isSwitch ? quiet(Switchyard.charts.loadSeries(namespace, { switch: key, hours: 1 })) : null,
      isSwitch ? quiet(Switchyard.api.guard(namespace, { query: { switch: key } })) : null,
      isSwitch && flag.release ? quiet(Switchyard.api.release(namespace, key, 50)) : null,
    ]);
    return {
      history: history.body.entries,
      nextCursor: history.body.next_cursor,
      series,
      guard: guard ? (guard.body.switches || [])[0] || null : null,
      release: release ? release.body : null,
      fetched: Date.now(),
    };
  }

  /** The flag's definition in a few lines, and as stored. */
  function definition(flag, state) {
    const { rolloutCell, rulesCell, killSwitchesCell, keyed } = Switchyard.views;
    const killSwitches = keyed(state.killSwitches);
    const cell = (td) => h('dd', {}, [...td.childNodes]);
    const plan = flag.release;
    return h('dl', { class: 'flag-definition', id: 'flag-definition' },
      h('dt', {}, 'Type'), h('dd', {}, flag.type === 'experiment' ? `experiment (${flag.value_type})` : 'plugin switch'),
      flag.owner ? [h('dt', {}, 'Owner'), h('dd', {}, flag.owner)] : null,
      flag.plugin_point ? [h('dt', {}, 'Plugin point'), h('dd', {}, flag.plugin_point)] : null,
      h('dt', {}, 'Rollout'), cell(rolloutCell(flag)),
      h('dt', {}, 'Rules'), cell(rulesCell(flag)),
      h('dt', {}, 'Kill switches'), cell(killSwitchesCell(flag, killSwitches)),
      plan ? [h('dt', {}, 'Release plan'), h('dd', {}, `${(plan.stages || []).length} stages: `,
        (plan.stages || []).map((stage) => Switchyard.releases.stageText(stage)).join(' → '))] : null,
      h('dt', {}, 'As stored'), h('dd', {}, h('details', {}, h('summary', {}, 'The flag as JSON'), h('pre', {}, JSON.stringify(flag, null, 2)))));
  }

  /** The charts: sessions and crash rate over time, and the release plan's course and evidence. */
  function charts(flag, page) {
    if (flag.type === 'experiment') {
      return h('p', { class: 'meta' }, 'An experiment flag: its variants\' results and charts are in the ',
        h('a', { href: `#/${encodeURIComponent(Switchyard.state.namespace)}/experiments/${encodeURIComponent(flag.key)}` }, 'Experiments view'), '.');
    }
    const parts = [];
    const { crashRateChart, seriesOf, sparkline, spanText } = Switchyard.charts;
    if (page.series && seriesOf(page.series, flag.key)) {
      const mine = seriesOf(page.series, flag.key);
      const guard = page.guard;
      const trips = guard ? [...(guard.open_trips || []), ...(guard.last_trip ? [guard.last_trip] : [])] : [];
      parts.push(h('figure', { class: 'flag-chart', id: 'flag-sessions' },
        h('figcaption', {}, `Sessions with it, per ${Math.round(page.series.step_seconds / 60)} min over the last ${spanText(page.series)}`),
        sparkline(mine.sessions, `sessions with ${flag.key}`, spanText(page.series))));
      parts.push(h('figure', { class: 'flag-chart', id: 'flag-crash-rate' },
        h('figcaption', {}, 'Crash rate with it (solid) against every session of the namespace (dashed)',
          guard ? [h('br'), h('span', { class: ['crash-sentence', ...toneOf(guard)] }, Switchyard.guard.crashSentence(guard))] : null),
        crashRateChart(page.series, flag.key, { bound: guard ? guard.bound : undefined, trips })));
    } else {
      parts.push(h('p', { class: 'empty' }, 'Its sessions over time could not be loaded.'));
    }
    const release = page.release;
    if (release) {
      const { rolloutOverTime, stageProgress, differenceChart, evidenceSentence, rollBackEvidence, statusOf } = Switchyard.releases;
      const evidence = release.assessment ? release.assessment.evidence : null;
      parts.push(h('section', { class: 'flag-release', id: 'flag-release', 'aria-label': `The release plan of ${flag.key}` },
        h('h3', {}, 'Release plan: ', statusOf(release).replace('_', ' ')),
        h('p', {}, release.next),
        evidence ? [h('p', { class: 'crash-sentence' }, evidenceSentence(evidence)), stageProgress(flag.key, evidence), differenceChart(flag.key, evidence)]
          : rollBackEvidence(release),
        rolloutOverTime(release)));
    }
    return parts;
  }

  function toneOf(guard) {
    const shown = Switchyard.guard.shownState(guard);
    const [tone] = Switchyard.guard.STATES[shown] || [''];
    return tone === 'killed' || tone === 'partial' ? [tone] : [];
  }

  /** The flag's history, newest first, as readable diffs, each change with Revert…. */
  function history(flag, page, on) {
    if (!page.history.length) return h('p', { class: 'empty' }, 'No change names this flag yet.');
    const { auditItem } = Switchyard.views;
    return [
      h('ol', { class: 'timeline', id: 'flag-history', 'aria-label': `Changes to ${flag.key}, newest first` },
        page.history.map((entry) => auditItem(entry, false, on))),
      page.nextCursor ? h('p', { class: 'meta' }, `The latest ${page.history.length} changes; the `,
        h('a', { href: `#/${encodeURIComponent(Switchyard.state.namespace)}/audit` }, 'Audit view'), ` filtered on ${flag.key} has every one.`) : null,
    ];
  }

  /** The flag's page. */
  function flagView(state, on) {
    const { heading, badge, flagState, holders, flagButtons, lastChange, keyed } = Switchyard.views;
    const page = state.flagPage;
    const flag = state.flags.find((candidate) => candidate.key === page.key);
    const back = h('p', {}, h('a', { href: `#/${encodeURIComponent(state.namespace)}/flags`, id: 'flag-back' }, '← All flags'));
    if (!flag) {
      return h('section', { 'aria-labelledby': 'view-title' }, heading(`Flag ${page.key || ''}`, state.namespace, state), back,
        h('p', { class: 'notice error', role: 'alert', id: 'flag-missing' }, `Namespace ${state.namespace} has no flag ${page.key}.`));
    }
    const killSwitches = keyed(state.killSwitches);
    const status = flagState(flag, killSwitches);
    const held = holders(flag, state);
    let body;
    if (page.error) body = h('p', { class: 'notice error', role: 'alert' }, page.error);
    else if (!page.loaded) body = h('p', { class: 'empty' }, 'Loading its charts and history…');
    else {
      body = [
        h('h2', {}, 'Charts'), charts(flag, page),
        h('h2', {}, 'History'),
        h('p', { class: 'help' }, 'Every change that touched it, newest first: what changed field by field (rollouts in percent), who, through what and why. Revert… undoes one change with a new one; like flagctl revert, it warns when a later change touched the same objects (reverting would undo that too).'),
        history(flag, page, on),
      ];
    }
    return h('section', { 'aria-labelledby': 'view-title', class: 'flag-page', dataset: { flag: flag.key } },
      heading(`Flag ${flag.key}`, state.namespace, state), back,
      h('div', { class: 'flag-head' }, badge(status),
        held.length ? h('ul', { class: 'plain held-by', id: 'flag-holders', 'aria-label': 'Who holds it' }, held.map((holder) => h('li', {},
          h('span', { class: ['badge', holder.tone], dataset: { holder: holder.kind } }, holder.label), ' ', h('span', { class: 'meta' }, holder.detail))))
          : h('p', { class: 'meta', id: 'flag-holders' }, 'Held by nothing but its own settings: no running plan, no crash guard trip, no kill.'),
        flagButtons(flag, on, 'page')),
      flag.description ? h('p', { class: 'description' }, flag.description) : null,
      status.exceptions.length ? h('ul', { class: 'plain meta' }, status.exceptions.map((text) => h('li', {}, text))) : null,
      lastChange(state),
      definition(flag, state),
      body,
      page.loaded ? h('p', { class: 'meta' }, 'As of ', timeElement(new Date(page.fetched).toISOString()), '; it follows every change live.') : null);
  }

  Switchyard.loadFlagPage = loadFlagPage;
  Switchyard.views.flag = flagView;
})(window);
