// Switchyard console: the small charts of the Flags, Crash guard, Releases and flag views, drawn by hand in SVG (no
// library: a few lines each, under the console's Content-Security-Policy and Trusted Types as they are).
//
// Every chart is an `<svg role="img">` whose aria-label says its numbers in words, and carries the numbers it was
// drawn from in data attributes (`data-values`, `data-rates`, `data-rollouts`), so a test can check them against the
// API's answer. The series come from GET /v1/namespaces/{ns}/series: 60 steps of sessions and crashed sessions per
// plugin switch and for the whole namespace (`loadSeries`).
'use strict';

(function (global) {
  const Switchyard = (global.Switchyard = global.Switchyard || {});
  const { h, svg, rate, count, percent } = Switchyard.dom;

  /** Loads the namespace's series over the last `hours` (every switch, or one); resolves to the body. */
  async function loadSeries(namespace, options = {}) {
    const { body } = await Switchyard.api.series(namespace, options);
    return body;
  }

  /** Each series body's series by switch, made on first use. */
  const seriesIndex = new WeakMap();

  /** The series of one switch (`''`: the baseline) in a series body, or null. */
  function seriesOf(body, key) {
    if (!body || !Array.isArray(body.series)) return null;
    // Indexed once per body: the Flags view asks for every switch's series.
    let index = seriesIndex.get(body.series);
    if (!index) {
      index = { switches: new Map(), baseline: null };
      for (const entry of body.series) {
        if (entry.subject === 'switch') {
          if (!index.switches.has(entry.key)) index.switches.set(entry.key, entry);
        } else if (entry.subject === 'baseline' && !index.baseline) {
          index.baseline = entry;
        }
      }
      seriesIndex.set(body.series, index);
    }
    return (key ? index.switches.get(key) : index.baseline) || null;
  }

  /** The start of step `index` of a series body, in milliseconds. */
  const stepTime = (body, index) => new Date(body.from).getTime() + index * body.step_seconds * 1000;

  /** A time on an axis: hour and minute. */
  const clock = (milliseconds) => new Date(milliseconds).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

  /** `"6 h"`, `"45 min"`: a series' span. */
  function spanText(body) {
    const minutes = Math.round((body.step_seconds * body.series[0].sessions.length) / 60);
    return minutes % 60 ? `${minutes} min` : `${minutes / 60} h`;
  }

  /**
   * Sessions per step as a sparkline (a Flags row): a line over the steps, the last step's dot, the total in the
   * label. `values` are the counts; `what` names them (`sessions with plugin_switch_x`).
   */
  function sparkline(values, what, span) {
    const width = 120;
    const height = 28;
    const top = Math.max(1, ...values);
    const x = (index) => 2 + (index / Math.max(1, values.length - 1)) * (width - 6);
    const y = (value) => height - 3 - (value / top) * (height - 6);
    const total = values.reduce((sum, value) => sum + value, 0);
    const label = `${count(total)} ${what} in the last ${span}; at most ${count(Math.max(0, ...values))} per step, ${count(values[values.length - 1] || 0)} in the latest.`;
    return svg('svg', {
      class: ['chart', 'sparkline', total ? '' : 'quiet'], viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label,
      'data-values': values.join(','), 'data-total': String(total), width, height,
    },
    svg('line', { class: 'axis', x1: 2, x2: width - 4, y1: height - 3, y2: height - 3 }),
    values.length > 1 ? svg('polyline', { class: 'spark-line', points: values.map((value, index) => `${x(index)},${y(value)}`).join(' ') }) : null,
    svg('circle', { class: 'spark-dot', cx: x(values.length - 1), cy: y(values[values.length - 1] || 0), r: 2.5 }));
  }

  /** Crash rates per step (null where a step has no session), rounded as the label shows them. */
  /** A chart's size and its plotting area: the margins (left, right, top, bottom) that its axes and labels take. */
  function frame(width, height, margins) {
    return { width, height, left: margins.left, right: width - margins.right, top: margins.top, bottom: height - margins.bottom };
  }

  function rates(series) {
    return series.sessions.map((sessions, index) => (sessions > 0 ? series.crashes[index] / sessions : null));
  }

  /**
   * A plugin switch's crash rate over time against the whole namespace's (dashed) and the bound the crash guard holds
   * it to (a red line), with the guard's trips marked where they fall. `trips` are `{time, scope_text}`.
   */
  function crashRateChart(body, key, options = {}) {
    const mine = seriesOf(body, key);
    const baseline = seriesOf(body, '');
    if (!mine || !baseline) return null;
    const { width, height, left, right, top, bottom } = frame(520, 170, { left: 62, right: 10, top: 10, bottom: 26 });
    const withRates = rates(mine);
    const baseRates = rates(baseline);
    const bound = typeof options.bound === 'number' ? options.bound : null;
    const hi = Math.max(0.005, bound || 0, ...withRates.filter((value) => value !== null), ...baseRates.filter((value) => value !== null)) * 1.15;
    const steps = mine.sessions.length;
    const x = (index) => left + ((index + 0.5) / steps) * (right - left);
    const y = (value) => bottom - (value / hi) * (bottom - top);
    const t0 = stepTime(body, 0);
    const t1 = stepTime(body, steps);
    const xTime = (time) => left + ((time - t0) / (t1 - t0)) * (right - left);
    /** A line through the steps that have sessions (a gap where a step has none). */
    const path = (values) => {
      let d = '';
      let pen = false;
      values.forEach((value, index) => {
        if (value === null) {
          pen = false;
          return;
        }
        d += `${pen ? 'L' : 'M'}${x(index).toFixed(1)},${y(value).toFixed(1)} `;
        pen = true;
      });
      return d.trim();
    };
    const sessions = mine.sessions.reduce((sum, value) => sum + value, 0);
    const crashes = mine.crashes.reduce((sum, value) => sum + value, 0);
    const baseSessions = baseline.sessions.reduce((sum, value) => sum + value, 0);
    const baseCrashes = baseline.crashes.reduce((sum, value) => sum + value, 0);
    const trips = (options.trips || []).map((trip) => ({ ...trip, at: new Date(trip.time).getTime() })).filter((trip) => trip.at >= t0 && trip.at <= t1);
    const label = `Crash rate of ${key} over the last ${spanText(body)}: ${count(crashes)} crashed of ${count(sessions)} sessions `
      + `(${rate(sessions ? crashes / sessions : null)}), against ${rate(baseSessions ? baseCrashes / baseSessions : null)} for every session of the namespace`
      + `${bound !== null ? `; the crash guard's bound is ${rate(bound)}` : ''}${trips.length ? `; ${trips.length} trip${trips.length === 1 ? '' : 's'} marked` : ''}.`;
    const lastRate = [...withRates].reverse().find((value) => value !== null);
    const above = bound !== null && typeof lastRate === 'number' && lastRate > bound;
    return svg('svg', {
      class: ['chart', 'rate-chart', above ? 'above-bound' : ''], viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label,
      'data-switch': key, 'data-rates': withRates.map((value) => (value === null ? '' : value.toFixed(6))).join(','),
      'data-sessions': mine.sessions.join(','), 'data-crashes': mine.crashes.join(','), 'data-bound': bound === null ? '' : String(bound),
      'data-trips': String(trips.length),
    },
    svg('line', { class: 'axis', x1: left, x2: left, y1: top, y2: bottom }),
    svg('line', { class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom }),
    svg('text', { class: 'tick', x: left - 6, y: top + 10, 'text-anchor': 'end' }, rate(hi)),
    svg('text', { class: 'tick', x: left - 6, y: bottom, 'text-anchor': 'end' }, '0 %'),
    svg('text', { class: 'tick', x: left, y: height - 6, 'text-anchor': 'start' }, clock(t0)),
    svg('text', { class: 'tick', x: right, y: height - 6, 'text-anchor': 'end' }, `${clock(t1)} (now)`),
    bound !== null ? [
      svg('line', { class: 'bound-line', x1: left, x2: right, y1: y(bound), y2: y(bound) }),
      svg('text', { class: 'tick bound-label', x: right - 2, y: y(bound) - 4, 'text-anchor': 'end' }, `bound ${rate(bound)}`),
    ] : null,
    svg('path', { class: 'baseline-line', d: path(baseRates) }),
    svg('path', { class: 'rate-line', d: path(withRates) }),
    withRates.map((value, index) => (value === null ? null : svg('circle', {
      class: ['rate-point', bound !== null && value > bound ? 'over' : ''], cx: x(index), cy: y(value), r: 2.2,
    }))),
    trips.map((trip) => svg('g', { class: 'trip-marker' },
      svg('line', { x1: xTime(trip.at), x2: xTime(trip.at), y1: top, y2: bottom }),
      svg('text', { class: 'tick', x: xTime(trip.at) + 3, y: top + 10 }, 'trip'))));
  }

  /**
   * An interval against zero and a margin: a difference (with the switch minus without it: crash rate points, or a
   * guardrail's points or relative change), its interval as a bar and its estimate as a dot; a dashed line at 0 and a
   * red one at the margin. `state` colours it (`worse`, `not-worse`, `undecided`); by default a crash rate's, worse when
   * the whole interval is above the margin. `unit` is `pp` (points) or `%` (relative).
   */
  function differenceBar(difference, lower, upper, margin, words, state, unit = 'pp') {
    const width = 520;
    const height = 64;
    const left = 10;
    const right = width - 10;
    const middle = 26;
    const finite = (value) => typeof value === 'number' && Number.isFinite(value);
    const values = [0, margin, difference, lower, upper].filter(finite);
    let lo = Math.min(...values);
    let hi = Math.max(...values);
    const pad = Math.max(0.001, (hi - lo) * 0.12);
    lo -= pad;
    hi += pad;
    const x = (value) => left + ((value - lo) / (hi - lo)) * (right - left);
    const points = (value) => `${value >= 0 ? '+' : ''}${(value * 100).toFixed(2)} ${unit}`;
    const worse = finite(lower) && lower > margin;
    const better = finite(upper) && upper < margin;
    const tone = state || (worse ? 'worse' : better ? 'not-worse' : 'undecided');
    return svg('svg', {
      class: ['chart', 'difference-chart', tone], viewBox: `0 0 ${width} ${height}`,
      role: 'img', 'aria-label': words, 'data-difference': finite(difference) ? String(difference) : '',
      'data-lower': finite(lower) ? String(lower) : '', 'data-upper': finite(upper) ? String(upper) : '', 'data-margin': String(margin),
    },
    svg('line', { class: 'zero-line', x1: x(0), x2: x(0), y1: 14, y2: middle + 14 }),
    svg('text', { class: 'tick zero', x: x(0), y: 11, 'text-anchor': 'middle' }, '0'),
    svg('line', { class: 'bound-line', x1: x(margin), x2: x(margin), y1: 14, y2: middle + 14 }),
    svg('text', { class: 'tick bound-label', x: x(margin), y: height - 6, 'text-anchor': 'middle' }, `margin ${points(margin)}`),
    finite(lower) && finite(upper)
      ? svg('rect', { class: 'ci-bar', x: x(lower), y: middle - 5, width: Math.max(2, x(upper) - x(lower)), height: 10, rx: 3 }) : null,
    finite(difference) ? svg('circle', { class: 'ci-estimate', cx: x(difference), cy: middle, r: 6 }) : null);
  }

  /**
   * A release plan's rollout over time, stage by stage: a step line from the plan's timeline (oldest first) to now,
   * each step's height its stage's rollout, the decision points marked (advanced, rolled back, paused…).
   * `points` are `{time, rollout, kind, label}` (rollout in basis points, null when the plan is off or removed).
   */
  function rolloutChart(points, key, now) {
    if (!points.length) return null;
    const { width, height, left, right, top, bottom } = frame(520, 150, { left: 46, right: 12, top: 12, bottom: 26 });
    const times = points.map((point) => new Date(point.time).getTime());
    const t0 = times[0];
    const t1 = Math.max(now, t0 + 60000);
    const x = (time) => left + ((time - t0) / (t1 - t0)) * (right - left);
    const y = (rollout) => bottom - ((rollout || 0) / 10000) * (bottom - top);
    let d = '';
    points.forEach((point, index) => {
      const start = x(times[index]);
      const end = x(index + 1 < points.length ? times[index + 1] : t1);
      d += `${index ? 'L' : 'M'}${start.toFixed(1)},${y(point.rollout).toFixed(1)} L${end.toFixed(1)},${y(point.rollout).toFixed(1)} `;
    });
    const label = `Rollout of ${key} over time: `
      + points.map((point) => `${point.label} at ${new Date(point.time).toLocaleTimeString()}, ${point.rollout === null ? 'off' : percent(point.rollout)}`).join('; ') + '.';
    return svg('svg', {
      class: ['chart', 'rollout-chart'], viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label, 'data-switch': key,
      'data-rollouts': points.map((point) => (point.rollout === null ? '' : String(point.rollout))).join(','),
      'data-kinds': points.map((point) => point.kind).join(','),
    },
    svg('line', { class: 'axis', x1: left, x2: left, y1: top, y2: bottom }),
    svg('line', { class: 'axis', x1: left, x2: right, y1: bottom, y2: bottom }),
    svg('text', { class: 'tick', x: left - 6, y: top + 4, 'text-anchor': 'end' }, '100 %'),
    svg('text', { class: 'tick', x: left - 6, y: bottom, 'text-anchor': 'end' }, '0 %'),
    svg('text', { class: 'tick', x: left, y: height - 6, 'text-anchor': 'start' }, clock(t0)),
    svg('text', { class: 'tick', x: right, y: height - 6, 'text-anchor': 'end' }, `${clock(t1)} (now)`),
    svg('path', { class: 'rollout-line', d: d.trim() }),
    points.map((point, index) => svg('circle', {
      class: ['decision-point', `kind-${point.kind}`], cx: x(times[index]), cy: y(point.rollout), r: 4.5,
    }, svg('title', {}, `${point.label}: ${point.rollout === null ? 'off' : percent(point.rollout)}`))));
  }

  /** A progress bar with its words: `<progress>` (read by screen readers as a percentage) and the text beside it. */
  function progress(value, maximum, words, id) {
    const done = maximum > 0 ? Math.min(1, value / maximum) : 1;
    return h('div', { class: ['progress', done >= 1 ? 'done' : ''], id },
      h('progress', { max: '1000', value: String(Math.round(done * 1000)), 'aria-label': words }),
      h('span', { class: 'meta' }, words));
  }

  Switchyard.charts = { loadSeries, seriesOf, sparkline, crashRateChart, differenceBar, rolloutChart, progress, spanText, frame };
})(window);
