// Switchyard console: the Releases view. Every release plan of the namespace (GET /v1/namespaces/{ns}/releases)
// with its status, stage, time in state, the current stage's sessions and crash rates with and without the switch,
// and what the next decision waits for; per plan its stages as steps and its timeline (GET …/flags/{key}/release:
// the changes that moved it, newest first), with Start…, Pause…, Resume…, Advance… and Abort… for editors.
//
// app.js calls Switchyard.loadReleases(namespace) when the view is opened, after each change and on Refresh, keeps
// the answer in state.releases and renders Switchyard.views.releases(state, on); the buttons call on.action.
'use strict';

(function (global) {
  const Switchyard = (global.Switchyard = global.Switchyard || {});
  const { h, percent, scopeText, isEverywhere, timeElement, rate, count, durationText } = Switchyard.dom;

  /** How many steps of each plan's timeline the view asks for. */
  const TIMELINE = 50;

  // Plan statuses as flagsd names them: badge tone and words, those waiting for a person first. A plan without a
  // state is declared, not started.
  const STATUSES = {
    running: ['on', 'running'],
    paused: ['partial', 'paused'],
    rolled_back: ['killed', 'rolled back'],
    completed: ['on', 'completed'],
    aborted: ['off', 'aborted'],
    declared: ['', 'not started'],
  };
  const ORDER = ['rolled_back', 'paused', 'running', 'declared', 'completed', 'aborted'];

  // What a person may do to a plan in each status (as flagsd allows it), in the order the buttons show.
  const ACTIONS = {
    declared: ['start'],
    running: ['pause', 'advance', 'abort'],
    paused: ['resume', 'advance', 'abort'],
    rolled_back: ['resume', 'advance', 'abort'],
    completed: ['start'],
    aborted: ['start'],
  };

  /**
   * Loads every plan of a namespace, each with its timeline. Resolves to `{releases, fetched}`; rejects with the
   * APIError of the list (app.js shows it, or signs out on 401). A plan whose timeline cannot be read (removed
   * meanwhile) keeps the list's item with `timelineError`.
   */
  async function loadReleases(namespace) {
    const { body } = await Switchyard.api.releases(namespace);
    const releases = await Promise.all((body.releases || []).map(async (release) => {
      try {
        return (await Switchyard.api.release(namespace, release.switch, TIMELINE)).body;
      } catch (error) {
        if (error.status === 401) throw error;
        return { ...release, timelineError: error.message };
      }
    }));
    return { releases, version: body.version, fetched: Date.now() };
  }

  const statusOf = (release) => (release.plan.state ? release.plan.state.status : 'declared');

  /** `cities lagos at 1 %`, `everyone at 10 %`. */
  function stageText(stage) {
    return `${isEverywhere(stage) ? 'everyone' : scopeText(stage)} at ${percent(stage.rollout)}`;
  }

  /** `stage 2 of 5 (cities lagos at 100 %)`, or what stands for none. */
  function stageOf(plan, index) {
    const stages = plan.stages || [];
    if (index === null || index === undefined || !stages[index]) return 'no stage (the switch off)';
    return `stage ${index + 1} of ${stages.length} (${stageText(stages[index])})`;
  }

  /** The stages as steps: done, current (or where it stopped), to come. */
  function stageSteps(release) {
    const plan = release.plan;
    const state = plan.state;
    const status = statusOf(release);
    const reached = state && typeof state.stage === 'number' ? state.stage : -1;
    return h('ol', { class: 'release-stages', 'aria-label': `Stages of ${release.switch}` },
      (plan.stages || []).map((stage, index) => {
        let step = 'upcoming';
        let words = 'to come';
        if (status === 'completed' || index < reached) {
          step = 'done';
          words = 'passed';
        } else if (index === reached) {
          step = status === 'running' ? 'current' : status;
          words = { current: 'current', paused: 'current, paused', rolled_back: 'rolled back to here', aborted: 'aborted here' }[step] || step;
        }
        const details = [];
        if (stage.soak) details.push(`soak ${stage.soak}`);
        if (stage.min_sessions) details.push(`${count(stage.min_sessions)} sessions`);
        return h('li', { class: 'release-step', dataset: { step, stage: String(index) }, 'aria-current': index === reached && status !== 'completed' ? 'step' : null },
          h('span', { class: 'step-number' }, String(index + 1)),
          h('span', { class: 'step-text' }, stageText(stage)),
          details.length ? h('span', { class: 'meta' }, ` (${details.join(', ')})`) : null,
          h('span', { class: 'step-state' }, ` · ${words}`));
      }));
  }

  // Each step of a timeline, named by comparing the plan's state after it with the state after the step before.
  const KINDS = {
    started: 'Started', advanced: 'Advanced', resumed: 'Resumed', paused: 'Paused', rolled_back: 'Rolled back',
    completed: 'Completed', aborted: 'Aborted', removed: 'Plan removed', running: 'Running',
  };

  function eventKind(after, before, oldestShown) {
    if (!after) return 'removed';
    if (after.status !== 'running') return after.status;
    const stage = (state) => (state && typeof state.stage === 'number' ? state.stage : -1);
    if (!before) return oldestShown && stage(after) > 0 ? 'advanced' : 'started';
    if (before.status === 'completed' || before.status === 'aborted') return 'started';
    if (stage(after) > stage(before)) return 'advanced';
    return before.status === 'running' ? 'running' : 'resumed';
  }

  /** One step of a plan's history as a timeline item: what, who, through what, when, why, and the state after it. */
  function timelineItem(event, kind, plan) {
    const after = event.state;
    const label = kind === 'advanced' && after ? `Advanced to stage ${after.stage + 1}` : KINDS[kind] || kind;
    return h('li', { class: ['release-event', event.source === 'release-plan' ? 'runner' : ''], dataset: { kind, version: String(event.version ?? '') } },
      h('div', { class: 'entry-head' },
        h('span', { class: ['badge', 'kind', kind] }, label),
        h('span', { class: 'summary' }, event.summary),
        event.version ? h('span', { class: 'badge' }, `v${event.version}`) : null,
        h('span', { class: 'badge source' }, event.source),
        h('span', {}, 'by ', h('strong', { class: 'actor' }, event.actor)),
        timeElement(event.time)),
      h('p', { class: 'entry-reason' }, event.reason ? ['Reason: ', h('span', { class: 'reason' }, event.reason)] : h('span', { class: 'empty' }, 'No reason given')),
      h('p', { class: 'meta state-after' }, after
        ? [`Then ${STATUSES[after.status] ? STATUSES[after.status][1] : after.status} at ${stageOf(plan, after.stage)}`,
          after.note ? [': ', h('span', { class: 'note' }, after.note)] : '']
        : 'The plan was removed from the switch.'));
  }

  function timeline(release) {
    if (release.timelineError) {
      return h('p', { class: 'notice error', role: 'alert' }, `Could not load the timeline of ${release.switch}: ${release.timelineError}`);
    }
    const events = release.timeline || [];
    if (!events.length) return h('p', { class: 'empty' }, 'Nothing happened to this plan yet.');
    const truncated = events.length >= TIMELINE;
    return [
      h('ol', { class: 'timeline release-timeline', id: `release-timeline:${release.switch}`, 'aria-label': `Timeline of the release of ${release.switch}, newest first` },
        events.map((event, index) => {
          const older = events[index + 1];
          return timelineItem(event, eventKind(event.state, older ? older.state : null, !older && truncated), release.plan);
        })),
      truncated ? h('p', { class: 'meta' }, `The latest ${TIMELINE} steps; the Audit view (flag ${release.switch}) has every change.`) : null,
    ];
  }

  /** The current stage's sessions and crashes with the switch and without it, and the runner's verdict. */
  function assessment(release) {
    const seen = release.assessment;
    if (!seen) return null;
    // Whose sessions the comparison's "without" are (`control`): the stage's own scope's, or the whole namespace's
    // when that scope has too few without the switch (a city at 100 %), or none's.
    const control = {
      scope: 'Without it',
      namespace: 'Without it, in the whole namespace (too few in the stage\'s scope)',
      none: 'Without it (every session has it)',
    }[seen.control] || 'Without it';
    const side = (name, numbers) => h('tr', { dataset: { side: name } },
      h('th', { scope: 'row' }, name === 'with' ? 'With the switch' : control),
      h('td', { 'data-label': 'Sessions', class: 'number sessions' }, count(numbers.sessions)),
      h('td', { 'data-label': 'Crashed', class: 'number crashes' }, count(numbers.crashes)),
      h('td', { 'data-label': 'Crash rate', class: 'number crash-rate' }, rate(numbers.crash_rate)));
    const verdict = { advance: 'advance', hold: 'hold', roll_back: 'roll back' }[seen.verdict] || seen.verdict;
    const decidedBy = seen.decided_by || [];
    return h('div', { class: 'release-assessment' },
      h('table', { class: 'compact' },
        h('caption', {}, 'In the current stage, since ', timeElement(seen.from), ` (counted in ${(seen.dimensions || []).join(', ') || 'all'})`),
        h('thead', {}, h('tr', {}, ['', 'Sessions', 'Crashed', 'Crash rate'].map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', {}, side('with', seen.with), side('without', seen.without))),
      guardrailTable(release.switch, seen.guardrails || [], (seen.evidence || {}).confidence),
      h('p', { class: ['meta', 'verdict', seen.verdict === 'roll_back' ? 'error' : ''] }, `The runner's verdict now: ${verdict}`,
        decidedBy.length ? [seen.verdict === 'hold' ? ', waiting for ' : ', decided by ', h('strong', { class: 'decided-by' }, decidedBy.join(', '))] : '',
        (seen.reasons || []).length ? `: ${seen.reasons.join('; ')}` : '.'));
  }

  /** `-0.52 pp`, `+1.3 %`: a guardrail's estimate or bound in its margin's unit. */
  function marginText(value, margin) {
    if (typeof value !== 'number') return '–';
    const points = /pp$/.test(margin);
    const text = (value * 100).toFixed(2);
    return `${value > 0 ? '+' : ''}${text} ${points ? 'pp' : '%'}`;
  }

  /**
   * The plan's guardrail metrics as judged in the stage: each one's margin, units, estimate and interval, state. The
   * intervals are confidence sequences at the plan's one-sided `confidence` (a fraction): valid however often read.
   */
  function guardrailTable(key, guardrails, confidence) {
    if (!guardrails.length) return null;
    const words = { not_worse: 'not worse', undecided: 'undecided', worse: 'worse', not_judged: 'not judged here' };
    const tones = { not_worse: 'on', undecided: 'partial', worse: 'killed', not_judged: '' };
    return h('table', { class: 'compact release-guardrails', id: `release-guardrails:${key}` },
      h('caption', {}, 'Guardrails (besides crash rate), on the units the stage\'s split put with and without the switch; ',
        typeof confidence === 'number' ? `each bound holds at ${+(confidence * 100).toFixed(3)} % however often it is read` : 'each bound holds however often it is read'),
      h('thead', {}, h('tr', {}, ['Metric', 'Margin', 'Units with / without', 'Change', 'Interval', 'State']
        .map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, guardrails.map((guardrail) => h('tr', { dataset: { guardrail: guardrail.metric, state: guardrail.state }, title: guardrail.summary },
        h('th', { scope: 'row' }, h('span', { class: 'key' }, guardrail.metric)),
        h('td', { 'data-label': 'Margin' }, guardrail.margin),
        h('td', { 'data-label': 'Units with / without', class: 'number' }, `${count(guardrail.units_with)} / ${count(guardrail.units_without)}`),
        h('td', { 'data-label': 'Change', class: 'number' }, marginText(guardrail.estimate, guardrail.margin)),
        h('td', { 'data-label': 'Interval', class: 'number' }, guardrail.lower == null ? '–'
          : `${marginText(guardrail.lower, guardrail.margin)} to ${marginText(guardrail.upper, guardrail.margin)}`),
        h('td', { 'data-label': 'State' }, h('span', { class: ['badge', tones[guardrail.state] || ''], dataset: { state: guardrail.state } },
          words[guardrail.state] || guardrail.state))))));
  }

  function actionButtons(release, on) {
    const status = statusOf(release);
    const key = release.switch;
    const words = {
      start: [status === 'declared' ? 'Start…' : 'Start again…', `Start the release of ${key}`],
      pause: ['Pause…', `Pause the release of ${key}`],
      resume: ['Resume…', `Resume the release of ${key}`],
      advance: ['Advance…', `Advance the release of ${key} to its next stage`],
      abort: ['Abort…', `Abort the release of ${key}`],
    };
    const buttons = (ACTIONS[status] || []).map((verb) => {
      const button = h('button', {
        type: 'button', class: ['small', verb === 'abort' ? 'danger' : verb === 'start' || verb === 'resume' ? 'primary' : ''],
        id: `release-${verb}:${key}`, 'aria-label': words[verb][1],
      }, words[verb][0]);
      button.addEventListener('click', () => on.action({ kind: 'release', verb, key, release }, button));
      return button;
    });
    return buttons.length ? h('div', { class: 'actions' }, buttons) : null;
  }

  /** One plan as a card: where it is, its evidence, what comes next, its actions, its stages and its timeline. */
  function planCard(release, fetched, on) {
    const plan = release.plan;
    const state = plan.state;
    const status = statusOf(release);
    const [tone, words] = STATUSES[status] || ['', status];
    const elapsed = typeof release.seconds_in_state === 'number' ? release.seconds_in_state + (Date.now() - fetched) / 1000 : null;
    const rules = [];
    rules.push(plan.soak ? `soak ${plan.soak}` : 'flagsd\'s default soak');
    rules.push(plan.min_sessions ? `${count(plan.min_sessions)} sessions` : 'flagsd\'s default sessions');
    if (typeof plan.margin === 'number') rules.push(`margin ${(plan.margin / 100).toFixed(2).replace(/\.?0+$/, '')} crash-rate points`);
    if (typeof plan.confidence === 'number') rules.push(`confidence ${percent(plan.confidence)}`);
    rules.push(`on a bad signal: ${plan.on_bad_signal === 'off' ? 'off' : 'back to the previous stage'}`);
    const guardrails = Object.entries(plan.guardrails || {});
    if (guardrails.length) rules.push(`guardrails: ${guardrails.map(([metric, margin]) => `${metric} ${margin}`).join(', ')}`);
    return h('article', { class: 'release', dataset: { release: release.switch, status }, 'aria-labelledby': `release-title:${release.switch}` },
      h('div', { class: 'release-head' },
        h('h2', { id: `release-title:${release.switch}` }, h('span', { class: 'key' }, release.switch)),
        h('span', { class: ['badge', tone], dataset: { state: status } }, words),
        actionButtons(release, on)),
      h('dl', { class: 'release-facts' },
        h('dt', {}, 'Stage'), h('dd', { class: 'release-stage' }, state ? stageOf(plan, state.stage) : `not started; ${plan.stages.length} stages`),
        state ? [h('dt', {}, 'In this state'), h('dd', { class: 'release-time' }, durationText(elapsed), ', since ', timeElement(state.since))] : null,
        state && state.note ? [h('dt', {}, 'Why'), h('dd', { class: 'release-note' }, state.note)] : null,
        h('dt', {}, 'Next'), h('dd', { class: 'release-next' }, release.next),
        h('dt', {}, 'Rules'), h('dd', { class: 'meta' }, rules.join(' · '))),
      assessment(release),
      h('h3', {}, 'Stages'), stageSteps(release),
      h('h3', {}, 'Timeline'), timeline(release));
  }

  /**
   * The Releases view: every plan of the namespace (those waiting for a person first), live, with a Refresh for the
   * evidence (it moves with events).
   */
  function releasesView(state, on) {
    const { heading, lastChange } = Switchyard.views;
    const releases = state.releases;
    const refresh = h('button', { type: 'button', class: 'small', id: 'releases-refresh' }, 'Refresh');
    refresh.addEventListener('click', () => on.releasesRefresh(refresh));
    let body;
    if (releases.error) {
      body = h('p', { class: 'notice error', role: 'alert', id: 'releases-error' }, releases.error);
    } else if (!releases.loaded) {
      body = h('p', { class: 'empty' }, 'Loading the release plans…');
    } else if (!releases.releases.length) {
      body = h('p', { class: 'empty', id: 'releases-empty' },
        'No plugin switch of this namespace has a release plan. Declare one under release: in the flag file, or start one with flagctl release start KEY --stage ….');
    } else {
      const rank = (release) => ORDER.indexOf(statusOf(release));
      const sorted = [...releases.releases].sort((a, b) => rank(a) - rank(b) || a.switch.localeCompare(b.switch));
      body = h('div', { id: 'releases' }, sorted.map((release) => planCard(release, releases.fetched, on)));
    }
    return h('section', { 'aria-labelledby': 'view-title' },
      heading('Releases', state.namespace, state),
      h('p', { class: 'help' },
        'A release plan rolls a plugin switch out stage by stage (cities, cohorts, then everyone) and flagsd advances it once a stage has soaked and its sessions with the switch are shown not to crash more than those without it; it rolls back when they do. A person\'s change to the switch pauses it; the crash guard\'s trip aborts it. ',
        releases.loaded ? ['Evidence as of ', timeElement(new Date(releases.fetched).toISOString()), '. '] : null, refresh),
      lastChange(state),
      body);
  }

  Switchyard.loadReleases = loadReleases;
  Switchyard.releases = { stageText, stageOf, statusOf, eventKind };
  Switchyard.views.releases = releasesView;
})(window);
