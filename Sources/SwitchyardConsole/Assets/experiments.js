// Switchyard console: the Experiments view. The namespace's experiments (experiment flags that split units between
// variants, plugin switches at a rollout strictly between 0 and 100 %, from the flags the console already holds) and,
// for the one chosen, its results from GET /v1/namespaces/{ns}/experiments/{key}: the sample ratio check first (a red
// banner, and every result greyed and marked untrustworthy, when it fails), the arms, then per metric each arm's mean,
// each treatment arm's difference to the control as an interval drawn against zero, and the course of that interval
// over time. Charts are small hand-drawn SVG, each with its numbers in words for screen readers (role="img",
// aria-label) and in text beside it.
//
// app.js keeps the chosen key and the answer in state.experiments, calls Switchyard.loadExperiment(namespace, key)
// when the view opens, after changes, every 30 s while it is shown and on Refresh, and renders
// Switchyard.views.experiments(state, on).
'use strict';

(function (global) {
  const Switchyard = (global.Switchyard = global.Switchyard || {});
  const { h, svg, percent, timeElement, count } = Switchyard.dom;

  // Experiments from the flags ------------------------------------------------------------------------------------

  /**
   * What experiment a flag runs, as flagsd counts them (ExperimentDesign): `{key, kind, split}` for an experiment flag
   * whose weights (default or a rule's) split units between two variants or more, or a plugin switch with a rollout
   * strictly between 0 and 100 % (default or a rule's); null otherwise.
   */
  function experimentOf(flag) {
    if (flag.type === 'experiment') {
      const variants = (flag.variants || []).map((variant) => variant.key);
      if (variants.length < 2) return null;
      const splits = [flag.weights || {}, ...(flag.rules || []).map((rule) => rule.weights || {})]
        .filter((weights) => Object.values(weights).filter((weight) => weight > 0).length > 1)
        .map((weights) => variants.map((variant) => weights[variant] || 0).join('/'));
      if (!splits.length) return null;
      return { key: flag.key, kind: 'experiment', split: [...new Set(splits)].join(' | ') };
    }
    const rollouts = [flag.rollout, ...(flag.rules || []).map((rule) => rule.rollout)]
      .filter((rollout) => typeof rollout === 'number' && rollout > 0 && rollout < 10000);
    if (!rollouts.length) return null;
    return { key: flag.key, kind: 'plugin switch', split: [...new Set(rollouts)].sort((a, b) => a - b).map(percent).join(' | ') };
  }

  /** Every experiment of the namespace's flags, experiment flags first, then by key. */
  function experimentsOf(flags) {
    return flags.map(experimentOf).filter(Boolean)
      .sort((a, b) => (a.kind === b.kind ? a.key.localeCompare(b.key) : a.kind === 'experiment' ? -1 : 1));
  }

  /** Loads one experiment's results; resolves to the answer, rejects with the APIError. */
  async function loadExperiment(namespace, key) {
    const { body } = await Switchyard.api.experiment(namespace, key);
    return body;
  }

  // Numbers, as flagctl experiment results prints them ----------------------------------------------------------

  /** Whether a metric's numbers are shares (shown in percent, differences in percentage points). */
  const isShare = (metric) => metric.kind === 'conversion' || metric.name === 'crash_rate';

  const finite = (value) => typeof value === 'number' && Number.isFinite(value);

  /** A mean or a difference: a share in percent (`pp` when signed), else a number; `–` when there is none. */
  function amount(value, share, signed) {
    if (!finite(value)) return '–';
    const sign = signed && value >= 0 ? '+' : '';
    if (share) return `${sign}${(value * 100).toFixed(2)}${signed ? ' pp' : '%'}`;
    return sign + (Math.abs(value) >= 100 ? value.toFixed(1) : value.toFixed(3));
  }

  /** A relative change: `+13.6%`. */
  const relative = (value) => (finite(value) ? `${value >= 0 ? '+' : ''}${(value * 100).toFixed(1)}%` : '–');

  const hasInterval = (interval) => interval && finite(interval.estimate) && finite(interval.lower) && finite(interval.upper);

  /** `+4.10 pp [-2.10 pp, +10.30 pp]`. */
  function intervalText(interval, share) {
    if (!hasInterval(interval)) return 'not enough units yet';
    return `${amount(interval.estimate, share, true)} [${amount(interval.lower, share, true)}, ${amount(interval.upper, share, true)}]`;
  }

  /** A time on a chart's axis: the hour and minute within two days, else the day. */
  function axisTime(date, span) {
    return span > 2 * 86400000
      ? date.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })
      : date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  }

  const VERDICTS = { better: 'on', worse: 'killed', inconclusive: '', untrustworthy: 'killed' };

  /** A linear scale from [lo, hi] (widened to hold 0, padded) onto [from, to]. */
  function scale(values, from, to, share) {
    let lo = Math.min(0, ...values);
    let hi = Math.max(0, ...values);
    if (hi - lo < 1e-12) {
      const half = share ? 0.01 : Math.max(1, Math.abs(hi));
      lo -= half;
      hi += half;
    }
    const pad = (hi - lo) * 0.08;
    lo -= pad;
    hi += pad;
    const map = (value) => from + ((value - lo) / (hi - lo)) * (to - from);
    map.lo = lo;
    map.hi = hi;
    return map;
  }

  // Charts ---------------------------------------------------------------------------------------------------------

  /**
   * Each treatment arm's difference to the control on one metric, as a horizontal bar from the interval's lower bound
   * to its upper bound with the estimate as a dot, against a zero line; coloured by verdict (grey when untrustworthy).
   */
  function intervalChart(metric, results) {
    const share = isShare(metric);
    const comparisons = metric.comparisons || [];
    const width = 480;
    const left = 120;
    const right = width - 14;
    const row = 30;
    const top = 22;
    const height = top + Math.max(1, comparisons.length) * row + 26;
    const values = comparisons.filter((comparison) => hasInterval(comparison.difference))
      .flatMap(({ difference }) => [difference.lower, difference.upper, difference.estimate]);
    const x = scale(values, left, right, share);
    const level = Math.round((1 - (results.statistics ? results.statistics.alpha : 0.05)) * 100);
    const verdictOf = (comparison) => (results.trustworthy ? comparison.verdict : 'untrustworthy');
    const label = `${metric.name}: each arm's difference to ${results.control} (the control) per unit, with its ${level} % confidence sequence. `
      + comparisons.map((comparison) => `${comparison.arm}: ${intervalText(comparison.difference, share)}, ${verdictOf(comparison)}.`).join(' ');
    const bottom = top + Math.max(1, comparisons.length) * row;
    return svg('svg', {
      class: 'chart interval-chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label,
      'data-metric': metric.name, 'data-bars': String(values.length / 3),
    },
    svg('line', { class: 'zero-line', x1: x(0), x2: x(0), y1: top - 6, y2: bottom + 2 }),
    svg('text', { class: 'tick zero', x: x(0), y: top - 10, 'text-anchor': 'middle' }, '0'),
    comparisons.map((comparison, index) => {
      const middle = top + index * row + row / 2;
      const difference = comparison.difference;
      const parts = [svg('text', { class: 'arm-label', x: left - 8, y: middle + 4, 'text-anchor': 'end' }, comparison.arm)];
      if (hasInterval(difference)) {
        const from = x(difference.lower);
        const to = x(difference.upper);
        parts.push(
          svg('rect', { class: 'ci-bar', x: from, y: middle - 5, width: Math.max(2, to - from), height: 10, rx: 3 }),
          svg('circle', { class: 'ci-estimate', cx: x(difference.estimate), cy: middle, r: 6 }));
      } else {
        parts.push(svg('text', { class: 'chart-note', x: left, y: middle + 4 }, 'not enough units yet'));
      }
      return svg('g', { class: ['ci-row', `verdict-${verdictOf(comparison)}`], 'data-arm': comparison.arm }, parts);
    }),
    svg('line', { class: 'axis', x1: left, x2: right, y1: bottom + 2, y2: bottom + 2 }),
    svg('text', { class: 'tick', x: left, y: bottom + 18, 'text-anchor': 'start' }, amount(x.lo, share, true)),
    svg('text', { class: 'tick', x: right, y: bottom + 18, 'text-anchor': 'end' }, amount(x.hi, share, true)));
  }

  /**
   * One treatment arm's difference over time (each point over the units that had entered by then): the estimate as a
   * line in its interval's band, against a zero line.
   */
  function historyChart(metric, arm, results) {
    const share = isShare(metric);
    const points = (metric.history || []).filter((point) => point.arm === arm && hasInterval(point.difference));
    const first = points[0];
    const last = points[points.length - 1];
    const label = points.length
      ? `${metric.name}: ${arm} minus ${results.control} over time, ${points.length} point${points.length === 1 ? '' : 's'} from `
        + `${new Date(first.time).toLocaleString()} to ${new Date(last.time).toLocaleString()}; latest `
        + `${intervalText(last.difference, share)} over ${count(last.units)} units.`
      : `${metric.name}: ${arm} minus ${results.control} over time: no point yet (too few units).`;
    const { width, height, left, right, top, bottom } = Switchyard.charts.frame(480, 150, { left: 86, right: 10, top: 8, bottom: 24 });
    const children = [];
    if (points.length) {
      const times = points.map((point) => new Date(point.time).getTime());
      let t0 = Math.min(...times);
      let t1 = Math.max(...times);
      if (t1 - t0 < 1000) {
        t0 -= 1800000;
        t1 += 1800000;
      }
      const x = (time) => left + ((time - t0) / (t1 - t0)) * (right - left);
      const y = scale(points.flatMap(({ difference }) => [difference.lower, difference.upper]), bottom, top, share);
      const xs = times.map(x);
      if (points.length === 1) {
        children.push(svg('rect', { class: 'ci-band', x: xs[0] - 5, y: y(last.difference.upper), width: 10,
                                    height: Math.max(1, y(last.difference.lower) - y(last.difference.upper)) }));
      } else {
        const upper = points.map((point, index) => `${xs[index]},${y(point.difference.upper)}`);
        const lower = points.map((point, index) => `${xs[index]},${y(point.difference.lower)}`).reverse();
        children.push(svg('polygon', { class: 'ci-band', points: upper.concat(lower).join(' ') }),
          svg('polyline', { class: 'history-line', points: points.map((point, index) => `${xs[index]},${y(point.difference.estimate)}`).join(' ') }));
      }
      children.push(
        svg('line', { class: 'zero-line', x1: left, x2: right, y1: y(0), y2: y(0) }),
        points.map((point, index) => svg('circle', { class: 'history-point', cx: xs[index], cy: y(point.difference.estimate), r: 3 })),
        svg('line', { class: 'axis', x1: left, x2: left, y1: top, y2: bottom }),
        // The bounds of the value axis, and 0 (a bound too close to 0 is left out rather than written over it).
        y(y.hi) < y(0) - 14 ? svg('text', { class: 'tick', x: left - 6, y: top + 10, 'text-anchor': 'end' }, amount(y.hi, share, true)) : null,
        svg('text', { class: 'tick zero', x: left - 6, y: y(0) + 4, 'text-anchor': 'end' }, '0'),
        y(y.lo) > y(0) + 14 ? svg('text', { class: 'tick', x: left - 6, y: bottom, 'text-anchor': 'end' }, amount(y.lo, share, true)) : null,
        svg('text', { class: 'tick', x: left, y: height - 6, 'text-anchor': 'start' }, axisTime(new Date(t0), t1 - t0)),
        svg('text', { class: 'tick', x: right, y: height - 6, 'text-anchor': 'end' }, axisTime(new Date(t1), t1 - t0)));
    } else {
      children.push(svg('line', { class: 'zero-line', x1: left, x2: right, y1: (top + bottom) / 2, y2: (top + bottom) / 2 }),
        svg('text', { class: 'chart-note', x: (left + right) / 2, y: (top + bottom) / 2 - 8, 'text-anchor': 'middle' }, 'no point yet'));
    }
    return svg('svg', {
      class: ['chart', 'history-chart', results.trustworthy ? '' : 'untrustworthy'], viewBox: `0 0 ${width} ${height}`,
      role: 'img', 'aria-label': label, 'data-metric': metric.name, 'data-arm': arm, 'data-points': String(points.length),
    }, children);
  }

  /** A history's points as a table, folded away: the chart's numbers for anyone. */
  function historyTable(metric, arm, results) {
    const share = isShare(metric);
    const points = (metric.history || []).filter((point) => point.arm === arm);
    if (!points.length) return null;
    return h('details', { class: 'history-numbers' },
      h('summary', {}, `The course of ${metric.name} (${arm}) in numbers`),
      h('table', { class: 'compact' },
        h('caption', {}, `${arm} minus ${results.control}, over the units that had entered by each time`),
        h('thead', {}, h('tr', {}, ['Time', 'Units', 'Difference [interval]'].map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', {}, points.map((point) => h('tr', {},
          h('td', { 'data-label': 'Time' }, timeElement(point.time)),
          h('td', { 'data-label': 'Units', class: 'number' }, count(point.units)),
          h('td', { 'data-label': 'Difference [interval]', class: 'number' }, intervalText(point.difference, share)))))));
  }

  // The results ----------------------------------------------------------------------------------------------------

  function sampleRatio(results) {
    const ratio = results.sample_ratio || {};
    if (!results.trustworthy) {
      return h('div', { class: 'notice error srm-banner', id: 'experiment-srm', role: 'alert', dataset: { status: ratio.status || 'mismatch' } },
        h('p', {}, h('strong', {}, 'Untrustworthy: sample ratio mismatch. '),
          'The units are not split as the flag declares, so no difference below can be trusted. Find what enters units into one arm more than another (a crash before the exposure is recorded, a cache serving one variant, forged events); don\'t read the differences.'),
        h('p', { class: 'meta srm-message' }, ratio.message));
    }
    const [tone, words] = ratio.status === 'ok' ? ['on', 'Sample ratio as declared'] : ['', 'Sample ratio not checked'];
    return h('div', { class: 'srm-ok', id: 'experiment-srm', dataset: { status: ratio.status || 'not_checked' } },
      h('p', {}, h('span', { class: ['badge', tone] }, words), ' ', h('span', { class: 'meta srm-message' }, ratio.message)));
  }

  function armsTable(results) {
    return h('table', { class: 'compact', id: 'experiment-arms' },
      h('caption', {}, `Units per arm in phase ${results.phase || '–'}`),
      h('thead', {}, h('tr', {}, ['Arm', 'Units', 'Share', 'Declared'].map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, (results.arms || []).map((arm) => h('tr', { dataset: { arm: arm.arm } },
        h('th', { scope: 'row' }, arm.arm, arm.arm === results.control ? h('span', { class: 'meta' }, ' (control)') : null),
        h('td', { 'data-label': 'Units', class: 'number units' }, count(arm.units)),
        h('td', { 'data-label': 'Share', class: 'number' }, amount(arm.observed_share, true, false)),
        h('td', { 'data-label': 'Declared', class: 'number' }, finite(arm.expected_share) ? amount(arm.expected_share, true, false) : 'not one share')))));
  }

  /** One metric: each arm's mean, the differences as intervals against zero, and their course over time. */
  function metricSection(metric, results) {
    const share = isShare(metric);
    const id = `metric-title:${metric.name}`;
    const verdictOf = (comparison) => (results.trustworthy ? comparison.verdict : 'untrustworthy');
    const comparisons = metric.comparisons || [];
    return h('section', { class: 'experiment-metric', dataset: { metric: metric.name }, 'aria-labelledby': id },
      h('h3', { id }, h('span', { class: 'key' }, metric.name), ' ',
        h('span', { class: 'meta' }, `${metric.kind}${metric.built_in ? ', built in' : ''}, ${metric.better} is better`)),
      metric.description ? h('p', { class: 'description' }, metric.description) : null,
      h('p', { class: 'metric-means' }, 'Mean per unit: ', (metric.arms || []).map((arm, index) => [
        index ? ' · ' : '', h('span', { class: 'mean', dataset: { arm: arm.arm } },
          h('strong', {}, arm.arm), arm.arm === results.control ? ' (control)' : '', ` ${amount(arm.mean, share, false)}`,
          h('span', { class: 'meta' }, ` (${count(arm.units)} units)`))])),
      comparisons.length ? [
        h('figure', { class: 'interval-figure' },
          intervalChart(metric, results),
          h('figcaption', {}, h('ul', { class: 'plain comparisons' }, comparisons.map((comparison) => {
            const verdict = verdictOf(comparison);
            return h('li', { dataset: { arm: comparison.arm, verdict } },
              h('strong', {}, comparison.arm), ` minus ${results.control}: `,
              h('span', { class: 'difference' }, intervalText(comparison.difference, share)),
              comparison.relative ? h('span', { class: 'meta' }, ` · lift ${relative(comparison.relative.estimate)} [${relative(comparison.relative.lower)}, ${relative(comparison.relative.upper)}]`) : null,
              ' ', h('span', { class: ['badge', VERDICTS[verdict] || '', 'verdict'], dataset: { verdict } }, verdict),
              comparison.cuped ? h('span', { class: 'meta' }, ` · CUPED${finite(comparison.variance_reduction) ? ` (variance ${Math.round(comparison.variance_reduction * 100)} % lower)` : ''}`) : null);
          })))),
        h('h4', {}, 'Over time'),
        comparisons.map((comparison) => h('figure', { class: 'history-figure' },
          h('figcaption', { class: 'meta' }, h('strong', {}, `${comparison.arm} minus ${results.control}`), ': the estimate (line) in its interval (band), each point over the units that had entered by then.'),
          historyChart(metric, comparison.arm, results),
          historyTable(metric, comparison.arm, results))),
      ] : h('p', { class: 'empty' }, 'No arm to compare with the control.'));
  }

  function results(state, on) {
    const experiments = state.experiments;
    const key = experiments.key;
    const refresh = h('button', { type: 'button', class: 'small', id: 'experiment-refresh', 'aria-label': `Refresh the results of ${key}` }, 'Refresh');
    refresh.addEventListener('click', () => on.experimentsRefresh(refresh));
    const cli = h('p', { class: 'help cli' }, 'From a terminal: ', h('code', {}, `flagctl experiment results ${key}`),
      ' (', h('code', {}, '-o json'), ' for the API\'s answer), and the per-unit table: ', h('code', {}, `flagctl experiment units ${key} > units.csv`), '.');
    const head = (...rest) => h('div', { class: 'experiment-head' },
      h('h2', { id: 'experiment-title' }, h('span', { class: 'key' }, key)), refresh, ...rest);
    if (experiments.error) {
      return h('section', { id: 'experiment-results', 'aria-labelledby': 'experiment-title', dataset: { experiment: key } },
        head(), h('p', { class: 'notice error', role: 'alert', id: 'experiment-error' }, experiments.error), cli);
    }
    const body = experiments.results;
    if (!body || body.flag !== key) {
      return h('section', { id: 'experiment-results', 'aria-labelledby': 'experiment-title', dataset: { experiment: key } },
        head(), h('p', { class: 'empty' }, `Loading the results of ${key}…`), cli);
    }
    const units = (body.arms || []).reduce((sum, arm) => sum + (arm.units || 0), 0);
    const statistics = body.statistics || {};
    const facts = [body.type === 'plugin_switch' ? 'plugin switch: with against without' : 'experiment flag',
      body.phase ? `phase ${body.phase}` : 'no unit has entered yet', `control ${body.control}`, `${count(units)} units`];
    const phases = body.phases || [];
    const declared = [...(body.metrics || [])].filter((metric) => !metric.built_in);
    const builtIn = (body.metrics || []).filter((metric) => metric.built_in);
    return h('section', {
      id: 'experiment-results', 'aria-labelledby': 'experiment-title',
      dataset: { experiment: key, trustworthy: String(body.trustworthy), status: (body.sample_ratio || {}).status || '' },
    },
    head(h('p', { class: 'meta' }, 'As of ', timeElement(new Date(experiments.fetched).toISOString()))),
    h('p', { class: 'meta experiment-facts' }, facts.join(' · ')),
    phases.length > 1 ? h('p', { class: 'meta' }, 'Phases: ', phases.map((phase) => `${phase.phase} (${count(phase.units)} units${phase.current ? ', the split now' : ''})`).join(', '),
      '. The results show one phase; ', h('code', {}, `flagctl experiment results ${key} --phase PHASE`), ' shows another.') : null,
    sampleRatio(body),
    armsTable(body),
    h('p', { class: 'help' }, `Differences are each arm's mean per unit minus the control's (in percentage points for shares), with ${Math.round((1 - (statistics.alpha || 0.05)) * 100)} % asymptotic confidence sequences: valid however often you look. The bar is the interval, the dot the estimate; green when it excludes 0 on the better side, red on the worse side, grey while inconclusive.`),
    h('div', { class: ['experiment-metrics', body.trustworthy ? '' : 'untrustworthy'], id: 'experiment-metrics' },
      declared.concat(builtIn).map((metric) => metricSection(metric, body))),
    cli);
  }

  /** The Experiments view: the namespace's experiments, and the chosen one's results. */
  function experimentsView(state, on) {
    const { heading, lastChange } = Switchyard.views;
    const experiments = state.experiments;
    const list = experimentsOf(state.flags);
    const hashFor = (key) => `#/${encodeURIComponent(state.namespace)}/experiments/${encodeURIComponent(key)}`;
    const picker = list.length
      ? h('ul', { class: 'plain experiment-list', id: 'experiment-list', 'aria-labelledby': 'experiment-list-title' },
        list.map((experiment) => h('li', { dataset: { experiment: experiment.key } },
          h('a', { href: hashFor(experiment.key), id: `experiment-link:${experiment.key}`, 'aria-current': experiment.key === experiments.key ? 'page' : null },
            h('span', { class: 'key' }, experiment.key)),
          h('span', { class: 'meta' }, ` ${experiment.kind} · ${experiment.split}`))))
      : h('p', { class: 'empty', id: 'experiments-empty' }, 'No experiment runs in this namespace: an experiment flag splits units between its variants, and a plugin switch at a rollout between 0 and 100 % compares the units with it and without it.');
    const chosen = experiments.key && !list.some((experiment) => experiment.key === experiments.key)
      ? h('p', { class: 'meta' }, `${experiments.key} does not split units now; its results are of the units that entered before.`) : null;
    return h('section', { 'aria-labelledby': 'view-title' },
      heading('Experiments', state.namespace, state),
      h('p', { class: 'help' }, 'What units do with each variant, or with and without a plugin: per outcome metric, one observation per unit, with intervals that stay valid however often you look. The sample ratio comes first: when the units are not split as declared, the results are untrustworthy. Results load again every 30 seconds while shown.'),
      lastChange(state),
      h('div', { class: 'experiments-layout' },
        h('div', { class: 'experiment-picker' }, h('h2', { id: 'experiment-list-title' }, 'Experiments'), picker),
        experiments.key ? h('div', { class: 'experiment-main' }, chosen, results(state, on)) : null));
  }

  Switchyard.loadExperiment = loadExperiment;
  Switchyard.experiments = { experimentOf, experimentsOf, amount, intervalText, isShare };
  Switchyard.views.experiments = experimentsView;
})(window);
