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

  /**
   * The runner's latest roll-back of a rolled-back plan, from its timeline: `{event, failed}` (the stage it rolled back
   * from, by the state before it), or null.
   */
  function rollBackOf(release) {
    if (statusOf(release) !== 'rolled_back') return null;
    const events = release.timeline || [];
    const index = events.findIndex((event) => event.state && event.state.status === 'rolled_back');
    if (index < 0) return null;
    const before = events[index + 1] && events[index + 1].state;
    const evidence = events[index].evidence || {};
    const failed = before && typeof before.stage === 'number' ? before.stage : typeof evidence.stage === 'number' ? evidence.stage : null;
    return { event: events[index], failed };
  }

  /** The stages as steps: done, current (or where it stopped), failed (a roll-back's), to come. */
  function stageSteps(release) {
    const plan = release.plan;
    const state = plan.state;
    const status = statusOf(release);
    const reached = state && typeof state.stage === 'number' ? state.stage : -1;
    const rollBack = rollBackOf(release);
    const failed = rollBack ? rollBack.failed : null;
    return h('ol', { class: 'release-stages', 'aria-label': `Stages of ${release.switch}` },
      (plan.stages || []).map((stage, index) => {
        let step = 'upcoming';
        let words = 'to come';
        if (index === failed && failed !== reached) {
          step = 'failed';
          words = 'failed: rolled back from here';
        } else if (status === 'completed' || index < reached) {
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

  const finite = (value) => typeof value === 'number' && Number.isFinite(value);

  /**
   * A stage's crash evidence in words a release manager reads first: how often sessions with the switch crash against
   * those without it, and where the runner stands (sure worse, sure not worse, or what it still needs).
   */
  function evidenceSentence(evidence) {
    if (!evidence || !finite(evidence.sessions_with) || !evidence.sessions_with) return 'No session with the switch in this stage yet.';
    const withRate = evidence.crash_rate_with;
    const withoutRate = evidence.crash_rate_without;
    let head;
    if (finite(withRate) && finite(withoutRate) && withoutRate > 0) {
      const ratio = withRate / withoutRate;
      head = ratio >= 1.1 ? `Sessions with it crash ${ratio.toFixed(1)}× as often as those without it`
        : ratio <= 0.9 ? 'Sessions with it crash less often than those without it' : 'Sessions with it crash about as often as those without it';
      head += ` (${rate(withRate)} against ${rate(withoutRate)})`;
    } else {
      head = `Sessions with it crash in ${rate(withRate)} of ${count(evidence.sessions_with)}`;
    }
    const margin = evidence.margin;
    let tail;
    if (finite(evidence.rollback_difference_lower) && evidence.rollback_difference_lower > margin) tail = 'shown worse than the margin allows: it rolls back';
    else if (finite(evidence.difference_upper) && evidence.difference_upper < margin) tail = 'shown not worse than the margin allows';
    else if (finite(evidence.difference) && evidence.difference > margin) tail = 'worse than the margin allows, not yet sure';
    else tail = 'not yet sure either way';
    const waiting = (evidence.waiting_for || []).length ? `; held by: ${evidence.waiting_for.join('; ')}` : '';
    return `${head}: ${tail}${waiting}.`;
  }

  /** Whether a running plan's evidence points at a roll-back: the runner's verdict, or its estimate past the margin. */
  function headingForRollBack(release) {
    const seen = release.assessment;
    if (!seen || statusOf(release) !== 'running') return false;
    const evidence = seen.evidence || {};
    return seen.verdict === 'roll_back' || (finite(evidence.difference) && finite(evidence.margin) && evidence.difference > evidence.margin && (evidence.crashes_with || 0) > 0);
  }

  /** The difference of crash rates (with minus without) as an interval against zero and the margin, with its words. */
  function differenceChart(key, evidence) {
    if (!evidence || !finite(evidence.margin)) return null;
    const level = finite(evidence.confidence) ? `${+(evidence.confidence * 100).toFixed(3)} %` : 'the plan\'s confidence';
    const points = (value) => (finite(value) ? `${value >= 0 ? '+' : ''}${(value * 100).toFixed(2)} pp` : '–');
    const words = `Crash rate with ${key} minus without it: ${points(evidence.difference)}, interval ${points(evidence.difference_lower)} to `
      + `${points(evidence.difference_upper)} (a confidence sequence at ${level}, valid however often it is read), against the margin ${points(evidence.margin)}.`;
    return h('figure', { class: 'difference-figure' },
      Switchyard.charts.differenceBar(evidence.difference, evidence.difference_lower, evidence.difference_upper, evidence.margin, words),
      h('figcaption', { class: 'meta' }, words));
  }

  /** Progress of the current stage towards its soak and its sessions, as bars. */
  function stageProgress(key, evidence) {
    if (!evidence) return null;
    const { progress } = Switchyard.charts;
    const soak = evidence.soak_seconds || 0;
    const sessions = evidence.min_sessions || 0;
    return h('div', { class: 'release-progress', id: `release-progress:${key}` },
      progress(evidence.time_in_stage_seconds || 0, soak, `Soak: ${durationText(evidence.time_in_stage_seconds || 0)} of ${durationText(soak)}`, `release-soak:${key}`),
      progress(evidence.sessions_with || 0, sessions, `Sessions with the switch: ${count(evidence.sessions_with || 0)} of ${count(sessions)}`, `release-sessions:${key}`));
  }

  /** The evidence a roll-back carried (the plan's timeline keeps it): its numbers, interval and words. */
  function rollBackEvidence(release) {
    const rollBack = rollBackOf(release);
    if (!rollBack || !rollBack.event.evidence) return null;
    const evidence = rollBack.event.evidence;
    const side = (name, sessions, crashes, crashRate) => h('tr', { dataset: { side: name } },
      h('th', { scope: 'row' }, name === 'with' ? 'With the switch' : 'Without it'),
      h('td', { 'data-label': 'Sessions', class: 'number sessions' }, count(sessions)),
      h('td', { 'data-label': 'Crashed', class: 'number crashes' }, count(crashes)),
      h('td', { 'data-label': 'Crash rate', class: 'number crash-rate' }, rate(crashRate)));
    return h('div', { class: 'release-assessment rolled-back', id: `release-rollback:${release.switch}` },
      h('p', { class: 'notice error' }, h('strong', {}, `Rolled back ${rollBack.failed !== null ? `from stage ${rollBack.failed + 1}` : ''} `), timeElement(rollBack.event.time), ': ',
        evidenceSentence(evidence)),
      h('table', { class: 'compact' },
        h('caption', {}, 'The evidence of the roll-back, counted from ', timeElement(evidence.from || rollBack.event.time), ' to ', timeElement(evidence.until || rollBack.event.time)),
        h('thead', {}, h('tr', {}, ['', 'Sessions', 'Crashed', 'Crash rate'].map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', {}, side('with', evidence.sessions_with, evidence.crashes_with, evidence.crash_rate_with),
          side('without', evidence.sessions_without, evidence.crashes_without, evidence.crash_rate_without))),
      differenceChart(release.switch, evidence),
      guardrailTable(release.switch, evidence.guardrails || [], evidence.confidence));
  }

  /** The plan's rollout over time, from its timeline (oldest first) to now, decisions marked. */
  function rolloutOverTime(release) {
    const events = [...(release.timeline || [])].reverse();
    if (!events.length) return null;
    const stages = release.plan.stages || [];
    const points = events.map((event, index) => {
      const state = event.state;
      const stage = state && typeof state.stage === 'number' && stages[state.stage] ? stages[state.stage] : null;
      const kind = eventKind(state, index ? events[index - 1].state : null, index === 0 && events.length >= TIMELINE);
      const label = kind === 'advanced' && state ? `Advanced to stage ${state.stage + 1}` : KINDS[kind] || kind;
      return { time: event.time, rollout: stage ? stage.rollout : null, kind, label: `${label}${stage ? ` (${stageText(stage)})` : ''}` };
    });
    return Switchyard.charts.rolloutChart(points, release.switch, Date.now());
  }

  /** The current stage's sessions and crashes with the switch and without it, and the runner's verdict. */
  function assessment(release) {
    const seen = release.assessment;
    if (!seen) return rollBackEvidence(release);
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
    const heading = headingForRollBack(release);
    return h('div', { class: ['release-assessment', heading ? 'heading-for-roll-back' : ''] },
      h('p', { class: ['crash-sentence', heading ? 'killed' : ''], id: `release-sentence:${release.switch}` }, evidenceSentence(seen.evidence)),
      stageProgress(release.switch, seen.evidence),
      differenceChart(release.switch, seen.evidence),
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
   * A guardrail's change as an interval against 0 and its margin (`-0.5pp`: points; `-2%`: relative), coloured by its
   * state; the words say the same.
   */
  function guardrailChart(guardrail, confidence) {
    const match = /^([+-]?\d+(?:\.\d+)?)\s*(pp|%)$/.exec(String(guardrail.margin || '').trim());
    if (!match || typeof guardrail.lower !== 'number' || typeof guardrail.upper !== 'number') return null;
    const margin = Number(match[1]) / 100;
    const unit = match[2];
    const level = typeof confidence === 'number' ? `${+(confidence * 100).toFixed(3)} %` : 'the plan\'s confidence';
    const words = `${guardrail.metric} with the switch against without it: ${marginText(guardrail.estimate, guardrail.margin)}, interval `
      + `${marginText(guardrail.lower, guardrail.margin)} to ${marginText(guardrail.upper, guardrail.margin)} (a confidence sequence at ${level}), `
      + `against the margin ${guardrail.margin}: ${guardrail.state.replace('_', ' ')}.`;
    const state = { worse: 'worse', not_worse: 'not-worse' }[guardrail.state] || 'undecided';
    return h('figure', { class: 'difference-figure guardrail-figure', dataset: { guardrail: guardrail.metric } },
      Switchyard.charts.differenceBar(guardrail.estimate, guardrail.lower, guardrail.upper, margin, words, state, unit),
      h('figcaption', { class: 'meta' }, words));
  }

  /**
   * The plan's guardrail metrics as judged in the stage: each one's margin, units, estimate and interval, state. The
   * intervals are confidence sequences at the plan's one-sided `confidence` (a fraction): valid however often read.
   */
  function guardrailTable(key, guardrails, confidence) {
    if (!guardrails.length) return null;
    return [guardrailRows(key, guardrails, confidence), guardrails.map((guardrail) => guardrailChart(guardrail, confidence))];
  }

  function guardrailRows(key, guardrails, confidence) {
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
        // After a roll-back nothing is the obvious next step: a person reads the evidence first.
        type: 'button', class: ['small', verb === 'abort' ? 'danger' : status !== 'rolled_back' && (verb === 'start' || verb === 'resume') ? 'primary' : ''],
        id: `release-${verb}:${key}`, 'aria-label': words[verb][1],
      }, words[verb][0]);
      button.addEventListener('click', () => on.action({ kind: 'release', verb, key, release }, button));
      return button;
    });
    return buttons.length ? h('div', { class: 'actions' }, buttons) : null;
  }

  /**
   * The runner's open proposals to roll the plan back to off (clients' evidence alone never turns a switch off: a person
   * confirms), first on the card in red, each with Confirm… and Dismiss….
   */
  function proposals(release, on) {
    const open = (release.proposals || []).filter((proposal) => proposal.state === 'open');
    if (!open.length) return null;
    return h('div', { class: 'notice error release-proposals', id: `release-proposals:${release.switch}`, role: 'alert' },
      open.map((proposal) => {
        const buttons = ['confirm', 'dismiss'].map((verb) => {
          const button = h('button', {
            type: 'button', class: ['small', verb === 'confirm' ? 'danger' : ''], id: `release-proposal-${verb}:${proposal.id}`,
            'aria-label': `${verb === 'confirm' ? 'Confirm' : 'Dismiss'} proposal ${proposal.id}: turn ${release.switch} off`,
          }, verb === 'confirm' ? 'Confirm…' : 'Dismiss…');
          button.addEventListener('click', () => on.action({ kind: 'release-proposal', verb, key: release.switch, release, proposal }, button));
          return button;
        });
        return h('div', { class: 'release-proposal', dataset: { proposal: String(proposal.id) } },
          h('p', {}, h('strong', {}, `Proposal ${proposal.id}: roll ${release.switch} back to off`), ' (from stage ', String(proposal.stage + 1), '), proposed ',
            timeElement(proposal.time), '. ', 'Clients\' evidence alone never turns a switch off: a person confirms or dismisses.'),
          proposal.reason ? h('p', { class: 'meta' }, proposal.reason) : null,
          h('div', { class: 'actions' }, buttons));
      }));
  }

  /** One plan as a card: where it is, its evidence, what comes next, its actions, its stages and its timeline. */
  function planCard(release, fetched, on) {
    const plan = release.plan;
    const state = plan.state;
    const status = statusOf(release);
    const heading = headingForRollBack(release);
    const [tone, words] = heading ? ['killed', release.assessment.verdict === 'roll_back' ? 'running: rolling back' : 'running: heading for a roll-back']
      : STATUSES[status] || ['', status];
    const elapsed = typeof release.seconds_in_state === 'number' ? release.seconds_in_state + (Date.now() - fetched) / 1000 : null;
    const rules = [];
    rules.push(plan.soak ? `soak ${plan.soak}` : 'flagsd\'s default soak');
    rules.push(plan.min_sessions ? `${count(plan.min_sessions)} sessions` : 'flagsd\'s default sessions');
    if (typeof plan.margin === 'number') rules.push(`margin ${(plan.margin / 100).toFixed(2).replace(/\.?0+$/, '')} crash-rate points`);
    if (typeof plan.confidence === 'number') rules.push(`confidence ${percent(plan.confidence)}`);
    rules.push(`on a bad signal: ${plan.on_bad_signal === 'off' ? 'off' : 'back to the previous stage'}`);
    const guardrails = Object.entries(plan.guardrails || {});
    if (guardrails.length) rules.push(`guardrails: ${guardrails.map(([metric, margin]) => `${metric} ${margin}`).join(', ')}`);
    return h('article', { class: ['release', tone === 'killed' ? 'trouble' : ''], dataset: { release: release.switch, status }, 'aria-labelledby': `release-title:${release.switch}` },
      h('div', { class: 'release-head' },
        h('h2', { id: `release-title:${release.switch}` }, h('a', { class: 'key', href: `#/${encodeURIComponent(Switchyard.state.namespace)}/flag/${encodeURIComponent(release.switch)}` }, release.switch)),
        h('span', { class: ['badge', tone], dataset: { state: status, heading: heading ? 'roll-back' : '' } }, words),
        actionButtons(release, on)),
      proposals(release, on),
      h('dl', { class: 'release-facts' },
        h('dt', {}, 'Stage'), h('dd', { class: 'release-stage' }, state ? stageOf(plan, state.stage) : `not started; ${plan.stages.length} stages`),
        state ? [h('dt', {}, 'In this state'), h('dd', { class: 'release-time' }, durationText(elapsed), ', since ', timeElement(state.since))] : null,
        state && state.note ? [h('dt', {}, 'Why'), h('dd', { class: 'release-note' }, state.note)] : null,
        h('dt', {}, 'Next'), h('dd', { class: ['release-next', heading ? 'error' : ''] },
          heading ? ['Heading for a roll-back: with the switch, sessions crash more than the margin allows. ', h('span', { class: 'meta' }, `flagsd: ${release.next}`)] : release.next),
        h('dt', {}, 'Rules'), h('dd', { class: 'meta' }, rules.join(' · '))),
      assessment(release),
      h('h3', {}, 'Stages'), stageSteps(release),
      h('h3', {}, 'Rollout over time'), rolloutOverTime(release) || h('p', { class: 'empty' }, 'No step yet.'),
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
  Switchyard.releases = {
    stageText, stageOf, statusOf, eventKind, evidenceSentence, headingForRollBack, differenceChart, stageProgress, rolloutOverTime, rollBackEvidence,
  };
  Switchyard.views.releases = releasesView;
})(window);
