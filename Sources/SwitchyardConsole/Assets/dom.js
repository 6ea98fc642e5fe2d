// Switchyard console: building the page safely, and formatting flag values for people.
//
// Nothing from the server is ever parsed as HTML: elements are made with `h()`, and every string becomes a text
// node. The Content-Security-Policy flagsd sends (Trusted Types required for script sinks) makes innerHTML with a
// string throw, so a slip here fails loudly instead of opening an XSS hole.
'use strict';

(function (global) {
  const Switchyard = (global.Switchyard = global.Switchyard || {});

  const forbiddenAttribute = /^(on|style$|srcdoc$|formaction$)/i;

  /**
   * Makes an element. `attributes` may hold `class`, `text` (text content), `dataset` (an object), boolean
   * attributes (true sets, false/null/undefined leaves out) and ordinary attributes; children are nodes or
   * strings (made text nodes), nested arrays allowed.
   */
  function h(tag, attributes, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (forbiddenAttribute.test(name)) throw new Error(`h(): attribute '${name}' is not allowed`);
      if (name === 'class') {
        element.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : value;
      } else if (name === 'text') {
        element.textContent = String(value);
      } else if (name === 'dataset') {
        for (const [key, data] of Object.entries(value)) element.dataset[key] = String(data);
      } else if (name === 'href' && !/^#/.test(String(value))) {
        throw new Error('h(): only in-page links (#...) are made');
      } else {
        element.setAttribute(name, value === true ? '' : String(value));
      }
    }
    append(element, children);
    return element;
  }

  const SVG = 'http://www.w3.org/2000/svg';

  /**
   * Makes an SVG element (charts are drawn by hand, no library): like `h()`, `class` and `text` are special, every
   * other attribute is set as given (never an event handler, a style or a link), children are nodes or strings.
   */
  function svg(tag, attributes, ...children) {
    const element = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (forbiddenAttribute.test(name) || /href$/i.test(name)) throw new Error(`svg(): attribute '${name}' is not allowed`);
      if (name === 'class') {
        element.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
      } else if (name === 'text') {
        element.textContent = String(value);
      } else {
        element.setAttribute(name, value === true ? '' : String(value));
      }
    }
    append(element, children);
    return element;
  }

  /** Appends nodes and strings (as text) to an element, skipping null, undefined and false. */
  function append(parent, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      parent.append(child instanceof Node ? child : String(child));
    }
    return parent;
  }

  /** Replaces an element's children. */
  function replace(parent, ...children) {
    parent.replaceChildren();
    return append(parent, children);
  }

  // Rollouts: integer basis points in the API (10000 = 100 %); people read and type percentages.

  /** `1250` → `"12.5 %"`, exactly (integer arithmetic, no floating point). */
  function percent(basisPoints) {
    const whole = Math.floor(basisPoints / 100);
    const fraction = basisPoints % 100;
    if (fraction === 0) return `${whole} %`;
    return `${whole}.${String(fraction).padStart(2, '0').replace(/0$/, '')} %`;
  }

  /**
   * A percentage as typed (`12.5`, `12,5`, `12.5 %`, at most two decimals) → basis points, or an error message.
   * Exact, like flagctl: `12.34` is 1234 basis points; a third decimal is refused rather than rounded.
   */
  function parsePercent(text) {
    const match = /^\s*(\d{1,3})(?:[.,](\d{1,2}))?\s*%?\s*$/.exec(String(text));
    if (!match) return { error: 'Enter a percentage from 0 to 100 with at most two decimals, e.g. 12.5.' };
    const basisPoints = Number(match[1]) * 100 + Number((match[2] || '').padEnd(2, '0'));
    if (basisPoints > 10000) return { error: 'A rollout cannot be above 100 %.' };
    return { basisPoints };
  }

  /** A comma- or space-separated list as typed → trimmed, non-empty values without duplicates. */
  function parseList(text) {
    const values = String(text || '').split(/[\s,]+/).map((value) => value.trim()).filter(Boolean);
    return [...new Set(values)];
  }

  /** `{cities: [a], cohorts: [b]}` → `"cities a · cohorts b"`; an empty scope is `"everywhere"`. */
  function scopeText(scope) {
    const parts = [];
    if (scope && scope.cities && scope.cities.length) parts.push(`cities ${scope.cities.join(', ')}`);
    if (scope && scope.cohorts && scope.cohorts.length) parts.push(`cohorts ${scope.cohorts.join(', ')}`);
    return parts.length ? parts.join(' · ') : 'everywhere';
  }

  function isEverywhere(scope) {
    return !scope || ((!scope.cities || !scope.cities.length) && (!scope.cohorts || !scope.cohorts.length));
  }

  /** A rule's conditions in words, in the rule's order: `cities lagos, paris · app ≥ 5.12.0`. */
  function conditionsText(rule) {
    const parts = [];
    for (const [field, value] of Object.entries(rule)) {
      // Every list (`cities`, `not_cohorts`, `platforms`, ...); allowlisted units are counted, not named.
      if (Array.isArray(value) && value.length) {
        parts.push(field === 'units'
          ? `${value.length} allowlisted unit${value.length === 1 ? '' : 's'}`
          : `${field.replace('_', ' ')} ${value.join(', ')}`);
      }
      // Every version attribute's bounds (`app_version_at_least`, `os_version_below`, ...): `app ≥ 5.12.0`.
      const bound = /^([a-z]+)_version_(at_least|below)$/.exec(field);
      if (bound) parts.push(`${bound[1]} ${bound[2] === 'below' ? '<' : '≥'} ${value}`);
    }
    return parts.length ? parts.join(' · ') : 'everyone';
  }

  /** `0.04967` → `"4.97 %"`; small rates keep three decimals (`0.012 %`); no value → `"–"`. */
  function rate(fraction) {
    if (typeof fraction !== 'number' || !Number.isFinite(fraction)) return '–';
    const value = fraction * 100;
    const digits = value >= 10 ? 1 : value >= 1 ? 2 : 3;
    return `${value.toFixed(digits).replace(/\.?0+$/, '')} %`;
  }

  /** `12345` → `"12,345"`; no value → `"–"`. */
  const count = (value) => (typeof value === 'number' ? value.toLocaleString('en-US') : '–');

  /** A span in seconds in words: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`. */
  function durationText(seconds) {
    if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return '–';
    const total = Math.max(0, Math.floor(seconds));
    if (total < 60) return `${total} s`;
    const minutes = Math.floor(total / 60);
    if (minutes < 60) return `${minutes} min`;
    const hours = Math.floor(minutes / 60);
    if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
    const days = Math.floor(hours / 24);
    return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
  }

  /** An RFC 3339 time as a `<time>` element in the reader's locale, with the exact time as its tooltip. */
  function timeElement(iso) {
    const date = new Date(iso);
    const valid = !Number.isNaN(date.getTime());
    return h('time', { datetime: iso, title: valid ? date.toISOString() : iso }, valid ? date.toLocaleString() : iso);
  }

  Switchyard.dom = {
    h, svg, append, replace, percent, parsePercent, parseList, scopeText, isEverywhere, conditionsText, timeElement, rate, count, durationText,
  };
})(window);
