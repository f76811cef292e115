// metronome's HTML report: draws hand-made SVG charts from the JSON report
// embedded in the page (#report-data) and the page's meta (#page-meta).
// No library, no network. Every number shown goes through one formatter
// (fmtNum and its kin below: 4 significant digits, thousands separated,
// units always shown), the rule text and SVG share; the embedded JSON keeps
// full precision. Derived figures (percentages, per-second rates of a
// count) are labelled as such.
// docs/html.md describes the page and its self-check (#selfcheck).
(function () {
  'use strict';
  var check = { ok: false, kind: '', errors: [], csp: [], resources: -1, charts: [], hovers: [], keyboard: null, zoom: null, verdict: '' };
  window.addEventListener('error', function (e) { check.errors.push('error: ' + e.message); });
  window.addEventListener('unhandledrejection', function (e) { check.errors.push('rejection: ' + e.reason); });
  document.addEventListener('securitypolicyviolation', function (e) {
    check.csp.push(e.violatedDirective + ' ' + e.blockedURI);
  });
  var consoleError = console.error;
  console.error = function () {
    check.errors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    consoleError.apply(console, arguments);
  };

  var SVGNS = 'http://www.w3.org/2000/svg';
  var VW = 900, VH = 300, ML = 70, MR = 30, MT = 16, MB = 44;
  var PW = VW - ML - MR, PH = VH - MT - MB;
  var PCT = ['0%', '90%', '99%', '99.9%', '99.99%', '99.999%', '99.9999%'];
  var METRIC_NAMES = {
    latency: 'latency', service_time: 'service time', send_lag: 'send lag', ttft: 'TTFT',
    itl: 'ITL (per token)', itl_chunk: 'ITL (per chunk)', tpot: 'TPOT', ttfat: 'TTFAT (first answer token)',
    tail: 'tail (last token to end)', latency_corrected: 'latency (CO-corrected)'
  };

  // ---- numbers for people ----------------------------------------------------
  // The shared rule of every output (golden vectors: tests/data/numbers.json;
  // Rust's twin for text and SVG: src/report/num.rs). num: at most 4
  // significant digits, integer digits never dropped, from 1000 an integer
  // with thousands separated by ','; zero '0'; non-finite '-'. count: an
  // integer, thousands separated. pct: a fraction, as num(100 x) '%'. bytes:
  // B below 1000, else the smallest of KiB, MiB, GiB, TiB under 1000.
  // toPrecision rounds the exact binary value to nearest, as the rule says.
  function grouped(digits) { return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
  function fmtNum(v) {
    v = Number(v);
    if (!isFinite(v)) return '-';
    if (v === 0) return '0';
    var a = Math.abs(v), sign = v < 0 ? '-' : '';
    var s = a.toPrecision(4);
    if (Number(s) >= 1000) return sign + grouped(BigInt(Math.round(a)).toString());
    var e = s.indexOf('e');
    if (e >= 0) {
      // Below 1e-6 toPrecision writes d.ddde-N: write it out in full.
      var exp = Number(s.slice(e + 1)), digits = s.slice(0, e).replace('.', '');
      s = '0.' + new Array(-exp).join('0') + digits;
    }
    return sign + s;
  }
  function fmtCount(v) {
    v = Number(v);
    if (!isFinite(v)) return '-';
    return (v < 0 ? '-' : '') + grouped(BigInt(Math.round(Math.abs(v))).toString());
  }
  function fmtPct(v) { v = Number(v); return isFinite(v) ? fmtNum(100 * v) + '%' : '-'; }
  function fmtBytes(v) {
    v = Number(v);
    if (!isFinite(v)) return '-';
    if (Math.abs(v) < 1000) return fmtCount(v) + ' B';
    var units = ['KiB', 'MiB', 'GiB', 'TiB'], i = 0, x = v / 1024;
    while (Math.abs(x) >= 1000 && i < units.length - 1) { x /= 1024; i++; }
    return fmtNum(x) + ' ' + units[i];
  }
  // For the browser test (tests/e2e/html/format.rs checks every golden vector).
  window.metronomeFormat = { num: fmtNum, count: fmtCount, pct: fmtPct, bytes: fmtBytes };

  // ---- small helpers -------------------------------------------------------
  // A figure of the report for people (null: '—'); with a unit when given.
  function num(v, unit) {
    if (v === null || v === undefined) return '—';
    return fmtNum(v) + (unit ? ' ' + unit : '');
  }
  // A count (an integer), with its noun made plural unless it is 1:
  // cnt(1, 'worker') = '1 worker', cnt(3, 'worker') = '3 workers'.
  function cnt(v, noun, plural) {
    if (v === null || v === undefined) return '—';
    return fmtCount(v) + (noun ? ' ' + (v === 1 ? noun : (plural || noun + 's')) : '');
  }
  function pct(v) { return v === null || v === undefined ? '—' : fmtPct(v); }
  // The one rule for enough samples (docs/report.md, "Enough samples"), as
  // the report carries it (`samples_needed`; the live page's meta): a
  // statistic of `n` values is shown only when `n` is enough for it, else
  // '-', as the text prints it. `stat`: min, mean, p50, p90, p95, p99,
  // p999 or max.
  var NEED = {};
  function shown(n, stat) { return NEED[stat] !== undefined && n >= NEED[stat]; }
  function qs(n, stat, v, unit) { return shown(n, stat) ? num(v, unit) : '-'; }
  // A Metric's statistic by the rule.
  function mq(m, stat, unit) { return qs(m.count, stat, m[stat], unit); }
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) { for (var k in attrs) { if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]); } }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, kid) {
    if (kid === null || kid === undefined || kid === false) return e;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(e, k); }); return e; }
    e.appendChild(typeof kid === 'object' ? kid : document.createTextNode(String(kid)));
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) { for (var k in attrs) e.setAttribute(k, attrs[k]); }
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // A table; with an id, the self-check records its cells (tests compare them).
  function table(caption, head, rows, id) {
    return el('div', { class: 'scroll' }, el('table', id ? { id: id } : null,
      caption ? el('caption', null, caption) : null,
      el('thead', null, el('tr', null, head.map(function (h, i) {
        return el('th', { scope: 'col', class: i === 0 ? 'l' : null }, h);
      }))),
      el('tbody', null, rows.map(function (r) {
        return el('tr', null, r.map(function (c, i) { return el(i === 0 ? 'th' : 'td', i === 0 ? { scope: 'row' } : null, c); }));
      }))));
  }
  // Sentences worded by Rust (warnings, details, notes), shown verbatim;
  // the self-check's text leaves them out (Rust formats their numbers).
  // Text shown as recorded (a seed, a timestamp, an id): no number rule.
  function raw(t) { return el('span', { class: 'raw' }, t); }
  // A tile: a name, and a figure with its unit after the first space
  // (drawn smaller, so the figure stays on one line).
  function stat(k, v) {
    var at = v.indexOf(' ');
    var shown = at > 0 ? [v.slice(0, at), ' ', el('span', { class: 'u' }, v.slice(at + 1))] : v;
    return el('div', { class: 'stat' }, el('div', { class: 'k' }, k), el('div', { class: 'v num' }, shown));
  }
  function dl(pairs) {
    return el('dl', { class: 'cfg' }, pairs.filter(function (p) { return p; }).map(function (p) {
      return [el('dt', null, p[0]), el('dd', null, p[1])];
    }));
  }
  function niceMax(v) {
    if (!(v > 0) || !isFinite(v)) return 1;
    var mag = Math.pow(10, Math.floor(Math.log10(v)));
    var steps = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
    for (var i = 0; i < steps.length; i++) { if (v <= steps[i] * mag * (1 + 1e-12)) return steps[i] * mag; }
    return 10 * mag;
  }
  // An axis tick: a round value (1, 2 or 5 x 10^k), so the formatter's
  // trailing zeros say nothing: 0.001, 0.5, 100, 1,000.
  function tick(v) {
    var t = fmtNum(v);
    return t.indexOf('.') < 0 ? t : t.replace(/0+$/, '').replace(/\.$/, '');
  }
  function isStream(r) { return !!r.workload || r.metrics.ttft.count > 0; }

  // ---- the chart -------------------------------------------------------------
  // spec: { id, title, desc, xLabel, yLabel, xType: 'lin' | 'pct', yType: 'lin' | 'log',
  //   xMin, xMax, series: [{ name, color, pts: [[x, y]], dashed, bars }], bands: [{ from, to, label }],
  //   vlines: [{ x, label }], hlines: [{ y, label }], diagonal, hover(si, pi) -> text,
  //   nearest: 'x' | 'xy', table: { caption, head, rows }, zoom: group, yToggle }
  function Chart(spec) {
    var c = this;
    c.spec = spec;
    c.domain = [spec.xMin, spec.xMax];
    c.yType = spec.yType || 'lin';
    c.cur = null;
    var tid = spec.id + '-t', did = spec.id + '-d';
    c.svg = sv('svg', { viewBox: '0 0 ' + VW + ' ' + VH, role: 'img', tabindex: '0', 'aria-labelledby': tid + ' ' + did, id: spec.id + '-svg' });
    c.tip = el('div', { class: 'tip', role: 'status', 'aria-live': 'polite', id: spec.id + '-tip' },
      'Hover the chart, or focus it and use the arrow keys, for exact values.');
    var legend = el('div', { class: 'legend', 'aria-hidden': 'true' }, spec.series.map(function (s) {
      return el('span', { style: '--sw: ' + s.color }, s.name);
    }));
    var controls = null;
    if (spec.yToggle) {
      var b = el('button', { type: 'button', 'aria-pressed': String(c.yType === 'log') }, 'log y axis');
      b.addEventListener('click', function () {
        c.yType = c.yType === 'log' ? 'lin' : 'log';
        b.setAttribute('aria-pressed', String(c.yType === 'log'));
        c.draw();
      });
      controls = el('div', { class: 'controls' }, b);
    }
    c.fig = el('figure', { id: spec.id, class: 'chart-fig' },
      el('figcaption', { id: tid }, spec.title),
      el('p', { class: 'sub', id: did }, spec.desc),
      legend, controls, el('div', { class: 'chart' }, c.svg), c.tip,
      spec.table ? el('details', null, el('summary', null, 'Table of this chart\'s values'),
        table(spec.table.caption, spec.table.head, spec.table.rows)) : null);
    c.bind();
    c.draw();
  }
  Chart.prototype.xpx = function (x) {
    var d = this.domain, span = d[1] > d[0] ? d[1] - d[0] : 1;
    return ML + PW * (x - d[0]) / span;
  };
  Chart.prototype.ypx = function (y) {
    var f;
    if (this.yType === 'log') {
      var v = Math.max(y, Math.pow(10, this.ylo));
      f = (Math.log10(v) - this.ylo) / (this.yhi - this.ylo);
    } else {
      f = y / this.ymax;
    }
    return MT + PH * (1 - Math.max(0, Math.min(1, f)));
  };
  // The indices of a series' points inside the x domain, with one neighbour
  // each side so a line leaves the plot at its edge.
  Chart.prototype.visible = function (pts) {
    var d = this.domain, out = [];
    for (var i = 0; i < pts.length; i++) {
      var x = pts[i][0];
      var inside = x >= d[0] && x <= d[1];
      var near = (i + 1 < pts.length && pts[i + 1][0] >= d[0] && x < d[0]) || (i > 0 && pts[i - 1][0] <= d[1] && x > d[1]);
      if (inside || near) out.push(i);
    }
    return out;
  };
  Chart.prototype.scaleY = function () {
    var c = this, ys = [];
    c.spec.series.forEach(function (s) { c.visible(s.pts).forEach(function (i) { ys.push(s.pts[i][1]); }); });
    (c.spec.hlines || []).forEach(function (h) { ys.push(h.y); });
    if (c.spec.diagonal) ys.push(c.domain[1]);
    var top = ys.reduce(function (a, b) { return Math.max(a, b); }, 0);
    c.ymax = niceMax(top);
    var pos = ys.filter(function (v) { return v > 0; });
    var lo = pos.length ? Math.floor(Math.log10(pos.reduce(function (a, b) { return Math.min(a, b); }))) : -1;
    var hi = pos.length ? Math.ceil(Math.log10(top)) : 0;
    if (hi <= lo) hi = lo + 1;
    c.ylo = lo; c.yhi = hi;
  };
  Chart.prototype.draw = function () {
    var c = this, s = c.spec, svg = c.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    c.scaleY();
    // Grid and y ticks.
    var yt = [];
    if (c.yType === 'log') {
      var mult = c.yhi - c.ylo <= 3 ? [1, 2, 5] : [1];
      for (var e = c.ylo; e <= c.yhi; e++) {
        mult.forEach(function (f) { if (e < c.yhi || f === 1) yt.push(f * Math.pow(10, e)); });
      }
    } else {
      for (var i = 0; i <= 4; i++) yt.push(c.ymax * i / 4);
    }
    yt.forEach(function (v) {
      var y = c.ypx(v);
      svg.appendChild(sv('line', { class: 'grid', x1: ML, x2: ML + PW, y1: y, y2: y }));
      svg.appendChild(sv('text', { x: ML - 6, y: y + 4, 'text-anchor': 'end' }, tick(v)));
    });
    // X ticks.
    var xt = [];
    if (s.xType === 'pct') {
      for (var k = Math.ceil(c.domain[0]); k <= Math.floor(c.domain[1]) && k < PCT.length; k++) xt.push([k, PCT[k]]);
    } else {
      for (var j = 0; j <= 5; j++) {
        var xv = c.domain[0] + (c.domain[1] - c.domain[0]) * j / 5;
        xt.push([xv, tick(xv)]);
      }
    }
    xt.forEach(function (t) {
      var x = c.xpx(t[0]);
      svg.appendChild(sv('line', { class: 'grid', x1: x, x2: x, y1: MT, y2: MT + PH }));
      svg.appendChild(sv('text', { x: x, y: MT + PH + 16, 'text-anchor': 'middle' }, t[1]));
    });
    svg.appendChild(sv('text', { x: ML + PW / 2, y: VH - 6, 'text-anchor': 'middle' }, s.xLabel));
    svg.appendChild(sv('text', { x: 14, y: MT + PH / 2, 'text-anchor': 'middle', transform: 'rotate(-90 14 ' + (MT + PH / 2) + ')' },
      s.yLabel + (c.yType === 'log' ? ' (log)' : '')));
    // A nested viewport with the outer coordinates clips to the plot area.
    var plot = sv('svg', { x: ML, y: MT - 4, width: PW, height: PH + 8, viewBox: ML + ' ' + (MT - 4) + ' ' + PW + ' ' + (PH + 8) });
    svg.appendChild(plot);
    (s.bands || []).forEach(function (b) {
      var x0 = c.xpx(b.from), x1 = c.xpx(b.to);
      var r = sv('rect', { class: 'band', x: x0, y: MT, width: Math.max(1, x1 - x0), height: PH });
      r.appendChild(sv('title', null, b.label));
      plot.appendChild(r);
      // The name where it fits; the hover read-out names it everywhere.
      if (x1 - x0 >= 6 * b.label.length) plot.appendChild(sv('text', { class: 'band-label', x: x0 + 3, y: MT + 11 }, b.label));
    });
    if (s.diagonal) {
      plot.appendChild(sv('line', { class: 'vline', x1: c.xpx(0), y1: c.ypx(0), x2: c.xpx(c.domain[1]), y2: c.ypx(c.domain[1]) }));
    }
    (s.hlines || []).forEach(function (h) {
      var y = c.ypx(h.y);
      plot.appendChild(sv('line', { class: 'hline', x1: ML, x2: ML + PW, y1: y, y2: y }));
      // The label above its line, or below when the line is at the top.
      plot.appendChild(sv('text', { x: ML + PW - 4, y: y - MT < 14 ? y + 13 : y - 4, 'text-anchor': 'end' }, h.label));
    });
    (s.vlines || []).forEach(function (v) {
      var x = c.xpx(v.x);
      plot.appendChild(sv('line', { class: 'vline', x1: x, x2: x, y1: MT, y2: MT + PH }));
      plot.appendChild(sv('text', { x: x - 4, y: MT + 12, 'text-anchor': 'end' }, v.label));
    });
    c.drawn = [];
    s.series.forEach(function (se) {
      var idx = c.visible(se.pts);
      c.drawn.push(idx.length);
      var d = idx.map(function (i) { return c.xpx(se.pts[i][0]).toFixed(1) + ',' + c.ypx(se.pts[i][1]).toFixed(1); });
      var g = sv('g', { 'data-series': se.name, 'data-points': String(idx.length) });
      if (se.bars) {
        idx.forEach(function (i) {
          var x = c.xpx(se.pts[i][0]);
          g.appendChild(sv('line', { x1: x, x2: x, y1: c.ypx(0), y2: c.ypx(se.pts[i][1]), stroke: se.color, 'stroke-width': 3 }));
        });
      } else if (d.length) {
        var attrs = { fill: 'none', stroke: se.color, 'stroke-width': 2, points: d.join(' ') };
        if (se.dashed) attrs['stroke-dasharray'] = '7 5';
        g.appendChild(sv('polyline', attrs));
      }
      if (se.markers || idx.length === 1) {
        idx.forEach(function (i) {
          g.appendChild(sv('circle', { cx: c.xpx(se.pts[i][0]), cy: c.ypx(se.pts[i][1]), r: 3.2, fill: se.color }));
        });
      }
      plot.appendChild(g);
    });
    svg.appendChild(sv('rect', { class: 'axis', x: ML, y: MT, width: PW, height: PH }));
    c.cursor = sv('g', { 'aria-hidden': 'true' });
    svg.appendChild(c.cursor);
    c.selRect = sv('rect', { class: 'sel', x: 0, y: MT, width: 0, height: PH, visibility: 'hidden' });
    svg.appendChild(c.selRect);
    if (c.cur) c.show(c.cur[0], c.cur[1]);
  };
  // Viewbox coordinates of a mouse event.
  Chart.prototype.local = function (ev) {
    var r = this.svg.getBoundingClientRect();
    return [(ev.clientX - r.left) * VW / (r.width || VW), (ev.clientY - r.top) * VH / (r.height || VH)];
  };
  // The point nearest a viewbox position: [series, index].
  Chart.prototype.nearest = function (vx, vy) {
    var c = this, best = null, bd = Infinity;
    c.spec.series.forEach(function (s, si) {
      c.visible(s.pts).forEach(function (i) {
        var dx = c.xpx(s.pts[i][0]) - vx, dy = c.ypx(s.pts[i][1]) - vy;
        var dd = c.spec.nearest === 'x' ? Math.abs(dx) : dx * dx + dy * dy;
        if (dd < bd) { bd = dd; best = [si, i]; }
      });
    });
    return best;
  };
  Chart.prototype.show = function (si, pi) {
    var c = this, s = c.spec.series[si];
    if (!s || !s.pts[pi]) return;
    c.cur = [si, pi];
    while (c.cursor.firstChild) c.cursor.removeChild(c.cursor.firstChild);
    var x = c.xpx(s.pts[pi][0]);
    if (c.spec.nearest === 'x') {
      c.cursor.appendChild(sv('line', { class: 'cursor', x1: x, x2: x, y1: MT, y2: MT + PH }));
      c.spec.series.forEach(function (o) {
        if (o.pts[pi]) c.cursor.appendChild(sv('circle', { cx: x, cy: c.ypx(o.pts[pi][1]), r: 4.5, fill: 'none', stroke: o.color, 'stroke-width': 2 }));
      });
    } else {
      c.cursor.appendChild(sv('circle', { cx: x, cy: c.ypx(s.pts[pi][1]), r: 5, fill: 'none', stroke: s.color, 'stroke-width': 2 }));
    }
    c.tip.textContent = c.spec.hover(si, pi);
  };
  // Where a point is on the screen (for the self-check's synthetic events).
  Chart.prototype.client = function (si, pi) {
    var p = this.spec.series[si].pts[pi], r = this.svg.getBoundingClientRect();
    return [r.left + this.xpx(p[0]) * r.width / VW, r.top + this.ypx(p[1]) * r.height / VH];
  };
  Chart.prototype.bind = function () {
    var c = this, drag = null;
    c.svg.addEventListener('mousemove', function (ev) {
      var p = c.local(ev);
      if (drag !== null && c.spec.zoom) {
        var a = Math.max(ML, Math.min(drag, p[0])), b = Math.min(ML + PW, Math.max(drag, p[0]));
        c.selRect.setAttribute('x', a); c.selRect.setAttribute('width', b - a);
        c.selRect.setAttribute('visibility', 'visible');
      }
      var n = c.nearest(p[0], p[1]);
      if (n) c.show(n[0], n[1]);
    });
    if (c.spec.zoom) {
      c.svg.addEventListener('mousedown', function (ev) { drag = c.local(ev)[0]; ev.preventDefault(); });
      window.addEventListener('mouseup', function (ev) {
        if (drag === null) return;
        var a = drag, b = c.local(ev)[0];
        drag = null;
        c.selRect.setAttribute('visibility', 'hidden');
        if (Math.abs(b - a) < 6) return;
        var toX = function (px) { return c.domain[0] + (Math.max(ML, Math.min(ML + PW, px)) - ML) / PW * (c.domain[1] - c.domain[0]); };
        c.spec.zoom.set([toX(Math.min(a, b)), toX(Math.max(a, b))]);
      });
    }
    c.svg.addEventListener('keydown', function (ev) {
      var cur = c.cur || [0, -1], si = cur[0], pi = cur[1];
      var n = c.spec.series.length;
      if (ev.key === 'ArrowRight') pi++;
      else if (ev.key === 'ArrowLeft') pi--;
      else if (ev.key === 'ArrowUp') si = (si + 1) % n;
      else if (ev.key === 'ArrowDown') si = (si + n - 1) % n;
      else if (ev.key === 'Home') pi = 0;
      else if (ev.key === 'End') pi = c.spec.series[si].pts.length - 1;
      else return;
      ev.preventDefault();
      pi = Math.max(0, Math.min(c.spec.series[si].pts.length - 1, pi));
      c.show(si, pi);
    });
  };

  // Charts that zoom together (the time series of one report).
  function ZoomGroup(full) {
    this.full = full.slice();
    this.charts = [];
  }
  ZoomGroup.prototype.set = function (d) {
    var f = this.full;
    var a = Math.max(f[0], d[0]), b = Math.min(f[1], d[1]);
    if (!(b > a)) return;
    this.charts.forEach(function (c) { c.domain = [a, b]; c.draw(); });
  };
  ZoomGroup.prototype.by = function (factor) {
    var d = this.charts[0].domain, mid = (d[0] + d[1]) / 2, half = (d[1] - d[0]) * factor / 2;
    if (mid - half < this.full[0]) mid = this.full[0] + half;
    if (mid + half > this.full[1]) mid = this.full[1] - half;
    this.set([mid - half, mid + half]);
  };
  ZoomGroup.prototype.controls = function () {
    var g = this;
    var btn = function (label, f) { var b = el('button', { type: 'button' }, label); b.addEventListener('click', f); return b; };
    return el('div', { class: 'controls', role: 'group', 'aria-label': 'Zoom the time series' },
      'Zoom (or drag across a chart):',
      btn('Zoom in', function () { g.by(0.5); }),
      btn('Zoom out', function () { g.by(2); }),
      btn('Reset', function () { g.set(g.full); }));
  };

  var charts = [];
  function chart(spec) { var c = new Chart(spec); charts.push(c); return c.fig; }

  // ---- percentiles -------------------------------------------------------------
  // (x = log10(1/(1-p)), value ms) per bucket; the curve ends at 1 - 1/count,
  // as the SVG's (src/report/svg.rs, percentile_curve).
  function curve(m) {
    var total = 0;
    m.buckets.forEach(function (b) { total += b[1]; });
    if (total === 0) return { pts: [], info: [] };
    var end = Math.min(Math.log10(total), 6);
    var pts = [[0, m.min]], info = [{ cum: 0, total: total }];
    var cum = 0;
    m.buckets.forEach(function (b) {
      cum += b[1];
      var p = cum / total;
      var x = cum === total ? end : Math.min(Math.log10(1 / (1 - p)), end);
      pts.push([x, Math.min(b[0], m.max)]);
      info.push({ cum: cum, total: total });
    });
    return { pts: pts, info: info };
  }
  var COLORS = ['var(--c0)', 'var(--c1)', 'var(--c2)', 'var(--c3)', 'var(--c4)', 'var(--c5)'];
  // A percentile chart of metrics [[key, label, Metric, dashed]], in `unit`
  // (ms unless given).
  function pctChart(id, title, desc, metrics, hlines, unit) {
    unit = unit || 'ms';
    metrics = metrics.filter(function (m) { return m[2] && m[2].count > 0; });
    if (!metrics.length) return el('p', { class: 'sub' }, title + ': no values recorded.');
    var curves = metrics.map(function (m) { return curve(m[2]); });
    var most = metrics.reduce(function (a, m) { return Math.max(a, m[2].count); }, 1);
    var decades = Math.max(4, Math.min(6, Math.ceil(Math.log10(most))));
    var series = metrics.map(function (m, i) {
      return { name: m[1], color: COLORS[i % COLORS.length], pts: curves[i].pts, dashed: !!m[3] };
    });
    return chart({
      id: id, title: title, desc: desc, xType: 'pct', yType: 'log', yToggle: true, xMin: 0, xMax: decades,
      xLabel: 'percentile (log scale of 1/(1-p); a curve ends at 1 - 1/count)', yLabel: unit,
      series: series, nearest: 'xy', hlines: hlines || [],
      hover: function (si, pi) {
        var m = metrics[si], inf = curves[si].info[pi], v = curves[si].pts[pi][1];
        if (pi === 0) return m[1] + ': min ' + num(v, unit);
        return m[1] + ': ' + num(v, unit) + ' at ' + pct(inf.cum / inf.total) + ' (' + cnt(inf.cum) + ' of ' + cnt(inf.total) + ' values at or below)';
      },
      table: {
        caption: 'Percentiles (' + unit + ') of the JSON report', head: ['metric'].concat(METRIC_COLS.map(function (k) { return k === 'p999' ? 'p99.9' : k; })),
        rows: metrics.map(function (m) { return [m[1]].concat(metricCells(m[2])); })
      }
    });
  }
  // count, min, mean, p50, p90, p95, p99, p99.9, max of a Metric.
  var METRIC_COLS = ['count', 'min', 'mean', 'p50', 'p90', 'p95', 'p99', 'p999', 'max'];
  function metricCells(m) { return METRIC_COLS.map(function (k) { return k === 'count' ? cnt(m[k]) : mq(m, k); }); }
  function pctTable(caption, metrics, unit, id) {
    return table(caption, ['metric (' + (unit || 'ms') + ')'].concat(METRIC_COLS.map(function (k) { return k === 'p999' ? 'p99.9' : k; })),
      metrics.filter(function (m) { return m[2]; }).map(function (m) { return [m[1]].concat(metricCells(m[2])); }), id);
  }

  // ---- one report ------------------------------------------------------------------
  // How the offered rate moved, after its mean: stages or a trace.
  function offeredShape(r) {
    if (r.stages && r.stages.length) {
      var rates = [];
      r.stages.forEach(function (s) { rates.push(s.start_rps, s.target_rps); });
      var lo = Math.min.apply(null, rates), hi = Math.max.apply(null, rates);
      return ' on average (' + cnt(r.stages.length, 'stage') + ', ' + num(lo) + ' to ' + num(hi, 'req/s') + ')';
    }
    if (r.arrival.trace) return ' on average (a trace of ' + cnt(r.arrival.trace.offsets, 'offset') + ' at speed ' + num(r.arrival.trace.speed) + ')';
    return '';
  }
  // A threshold's measured value with its unit: ms for a metric's
  // statistic, a percentage for a ratio, req/s or tokens/s for a rate, a
  // count of requests for a count.
  function thresholdValue(t) {
    var lhs = t.expr.split(/[<>=!]/)[0].trim(), stat = lhs.split('.')[1];
    if (stat === 'count') return cnt(t.value, 'value');
    if (stat !== undefined) return num(t.value, 'ms');
    if (lhs === 'error_rate' || lhs === 'achieved_ratio' || lhs === 'goodput') return pct(t.value);
    if (lhs === 'achieved_rps' || lhs === 'throughput_rps') return num(t.value, 'req/s');
    if (lhs === 'output_tokens_per_s') return num(t.value, 'tokens/s');
    return cnt(t.value, 'request');
  }
  function verdict(r, meta) {
    var q = r.requests, failed = r.thresholds.filter(function (t) { return !t.passed; });
    var unmeasured = failed.filter(function (t) { return t.not_evaluated; }).length;
    var warnings = r.generator.warnings, behind = r.generator.behind;
    var bad = failed.length > 0 || (q.ok === 0 && q.sent > 0);
    var cls = bad ? 'verdict fail' : (warnings.length || behind.length || r.interrupted || r.partial) ? 'verdict warn' : 'verdict';
    var head;
    if (q.ok === 0 && q.sent > 0) head = 'No request succeeded.';
    else if (failed.length > unmeasured) head = 'Thresholds breached: ' + cnt(failed.length - unmeasured) + ' of ' + cnt(r.thresholds.length) + '.' +
      (unmeasured ? ' ' + cnt(unmeasured) + ' not evaluated (too few samples).' : '');
    else if (failed.length) head = 'Thresholds not evaluated (too few samples): ' + cnt(unmeasured) + ' of ' + cnt(r.thresholds.length) + '.';
    else if (r.thresholds.length) head = r.thresholds.length === 1 ? 'The threshold held.' : 'All ' + cnt(r.thresholds.length) + ' thresholds held.';
    else head = 'No thresholds set.';
    if (warnings.length) head += ' ' + cnt(warnings.length, 'warning') + '.';
    // Conversations: the schedule offers sessions, the requests are their turns.
    var conv = r.sessions && r.sessions.planned_turns ? r.sessions : null;
    var rate = r.model === 'closed'
      ? 'Closed loop, ' + cnt(r.closed_workers, 'worker') + ': achieved ' + num(r.achieved_rps, 'req/s') + ' (no schedule: a stall silently lowers the rate).'
      : conv
        ? 'Offered ' + num(r.offered_rps, 'sessions/s') + ' (' + cnt(conv.planned_turns, 'turn') + ' planned: ' +
          num(conv.offered_turns_per_s, 'req/s') + '), achieved ' + num(r.achieved_rps, 'req/s') + ' (' +
          (conv.offered_turns_per_s > 0 ? pct(r.achieved_rps / conv.offered_turns_per_s) : '—') +
          ' of the planned turns) over ' + num(r.duration_s, 's') + '.'
        : 'Offered ' + num(r.offered_rps, 'req/s') + offeredShape(r) + ', achieved ' + num(r.achieved_rps, 'req/s') + ' (' +
          (r.offered_rps > 0 ? pct(r.achieved_rps / r.offered_rps) : '—') + ' of offered) over ' + num(r.duration_s, 's') + '.';
    var kinds = Object.keys(r.errors.by_kind).filter(function (k) { return r.errors.by_kind[k] > 0; });
    var lines = [];
    lines.push(el('li', null, rate));
    lines.push(el('li', null, 'Throughput ' + num(r.throughput_rps, 'ok/s') + ' over the real window of ' + num(r.window.window_s, 's') + '.'));
    lines.push(el('li', null, 'ok ' + cnt(q.ok) + ', errors ' + cnt(q.errors) + ', dropped ' + cnt(q.dropped) + ', unsent ' + cnt(q.unsent) +
      ' (scheduled ' + cnt(q.scheduled) + ', sent ' + cnt(q.sent) + ', timeouts ' + cnt(q.timeouts) + ', retried ' + cnt(q.retried) + ').'));
    if (kinds.length) {
      lines.push(el('li', null, 'Errors by kind: ' + kinds.map(function (k) { return k + ' ' + cnt(r.errors.by_kind[k]); }).join(', ') +
        (Object.keys(r.errors.by_status).length ? '; by status: ' + Object.keys(r.errors.by_status).map(function (s) { return s + ' ' + cnt(r.errors.by_status[s]); }).join(', ') : '') + '.'));
    }
    r.thresholds.forEach(function (t) {
      lines.push(t.not_evaluated
        ? el('li', null, el('span', { class: 'fail-t' }, 'NOT EVALUATED'), ' ', el('code', null, t.expr), ': ' + t.not_evaluated)
        : el('li', null, el('span', { class: t.passed ? 'pass' : 'fail-t' }, t.passed ? 'PASS' : 'FAIL'), ' ',
          el('code', null, t.expr), ': measured ' + thresholdValue(t)));
    });
    warnings.forEach(function (w) { lines.push(el('li', null, el('span', { class: 'warn-t' }, 'Warning'), ' ', w)); });
    // A stretch is usually a warning already (build.rs words the first
    // few so); list up to three others here, and all under "Over time".
    var others = behind.filter(function (b) {
      return !warnings.some(function (w) { return w.indexOf(b.detail) >= 0; });
    });
    others.slice(0, 3).forEach(function (b) {
      lines.push(el('li', null, el('span', { class: 'warn-t' }, 'Behind schedule'), ' ' + num(b.from_s, 's') + ' to ' + num(b.until_s, 's') +
        ' (' + b.cause + '): ' + b.detail));
    });
    if (others.length > 3) {
      lines.push(el('li', null, el('span', { class: 'warn-t' }, 'Behind schedule'), ' in ' + (others.length - 3) +
        ' more stretches (' + cnt(behind.length) + ' in all, listed under Over time).'));
    }
    if (r.interrupted) lines.push(el('li', null, 'Interrupted by a signal: the report covers what was measured until then.'));
    if (r.partial) lines.push(el('li', null, 'Partial merge (' + r.shard + '): the figures cover only these shards.'));
    var box = el('section', { class: cls, id: 'verdict', 'aria-label': 'Verdict' },
      el('p', { class: 'head' }, head), el('ul', { class: 'lines' }, lines),
      el('div', { class: 'stats' },
        conv ? stat('offered', num(r.offered_rps, 'sessions/s')) : r.model === 'closed' ? null : stat('offered' + (r.stages && r.stages.length ? ' (mean)' : ''), num(r.offered_rps, 'req/s')),
        conv ? stat('planned turns', num(conv.offered_turns_per_s, 'req/s')) : null,
        stat('achieved', num(r.achieved_rps, 'req/s')),
        stat('ok', cnt(q.ok)), stat('errors', cnt(q.errors)), stat('dropped', cnt(q.dropped)),
        stat('latency p50', mq(r.metrics.latency, 'p50', 'ms')), stat('latency p99', mq(r.metrics.latency, 'p99', 'ms')),
        stat('latency max', mq(r.metrics.latency, 'max', 'ms')), stat('error rate', pct(r.error_rate)),
        stat('goodput', pct(r.goodput))));
    return box;
  }

  // The rate of stage `s` at schedule time t (s), req/s; `ramp` is the
  // report's arrival.ramp.
  function stageRate(s, ramp, t) {
    var f = s.until_s > s.from_s ? Math.max(0, Math.min(1, (t - s.from_s) / (s.until_s - s.from_s))) : 1;
    if (s.start_rps === s.target_rps) return s.start_rps;
    if (ramp === 'exponential' && s.start_rps > 0 && s.target_rps > 0) return s.start_rps * Math.pow(s.target_rps / s.start_rps, f);
    return s.start_rps + (s.target_rps - s.start_rps) * f;
  }
  // Requests stage `s` offers from schedule time a to b (the exact integral
  // of its linear or exponential rate).
  function stageOffers(s, ramp, a, b) {
    a = Math.max(a, s.from_s); b = Math.min(b, s.until_s);
    if (!(b > a)) return 0;
    var ra = stageRate(s, ramp, a), rb = stageRate(s, ramp, b);
    if (ramp === 'exponential' && s.start_rps > 0 && s.target_rps > 0 && s.start_rps !== s.target_rps) {
      return (rb - ra) * (s.until_s - s.from_s) / Math.log(s.target_rps / s.start_rps);
    }
    return (b - a) * (ra + rb) / 2;
  }
  // Each interval's offered rate (req/s, this report's shards' share) for
  // a run whose rate moves: the stages' integral over the interval, or a
  // trace's due requests; null for a steady rate.
  function offeredPerInterval(r, width) {
    var iv = r.intervals;
    // The drain's rows (after the schedule) offer nothing.
    var none = (r.drain || []).map(function () { return 0; });
    if (r.stages && r.stages.length) {
      var n = /^\d+\/\d+$/.test(r.shard) ? Number(r.shard.split('/')[1]) : 1;
      var ramp = r.arrival.ramp;
      return iv.map(function (v) {
        var a = r.warmup_s + v.start_s, b = a + width, sum = 0;
        r.stages.forEach(function (s) { sum += stageOffers(s, ramp, a, b); });
        return sum / width / n;
      }).concat(none);
    }
    if (r.arrival.trace || r.live) return iv.map(function (v) { return v.scheduled / width; }).concat(none);
    return null;
  }

  // The report's rows over time: the schedule's (`intervals`), then the
  // drain's (`drain`: replies and a backlog's sends after the schedule's
  // end), so the charts hold every row the totals are the sum of.
  function timeSeries(r) {
    var sched = r.intervals, drain = r.drain || [];
    var iv = sched.concat(drain);
    if (!iv.length) return el('p', { class: 'sub' }, 'No intervals recorded.');
    var width = iv.length > 1 ? iv[1].start_s - iv[0].start_s : (r.duration_s || 1);
    var end = iv[iv.length - 1].start_s + width;
    var zoom = new ZoomGroup([0, end]);
    var xs = iv.map(function (i) { return i.start_s + width / 2; });
    var bands = r.generator.behind.map(function (b) { return { from: b.from_s, to: b.until_s, label: 'behind: ' + b.cause }; });
    if (drain.length) bands.push({ from: drain[0].start_s, to: end, label: 'drain: after the schedule' });
    var when = function (i) {
      var b = r.generator.behind.filter(function (b) { return iv[i].start_s >= b.from_s && iv[i].start_s < b.until_s; })[0];
      return 'interval ' + num(iv[i].start_s, 's') + ' (' + num(width, 's') + ' wide' + (b ? ', behind: ' + b.cause : '') +
        (iv[i].phase === 'drain' ? ', drain: after the schedule' : '') + (iv[i]['final'] === false ? ', provisional' : '') + ')';
    };
    var mk = function (f) { return iv.map(function (v, i) { return [xs[i], f(v, i)]; }); };
    // A series of statistic `stat` over the intervals whose `n` values are
    // enough for it by the one rule (`idx`: each point's interval).
    var mkIf = function (name, color, stat, n, f) {
      var idx = iv.map(function (v, i) { return i; }).filter(function (i) { return shown(n(iv[i]), stat); });
      return { name: name, color: color, idx: idx, pts: idx.map(function (i) { return [xs[i], f(iv[i], i)]; }) };
    };
    var okOf = function (v) { return v.ok; }, sentOf = function (v) { return v.sent; };
    var ts = function (id, title, desc, yLabel, series, hover, head, row, hlines) {
      // No interval with enough values for any of its statistics: a sentence.
      if (!series.some(function (s) { return s.pts.length; })) {
        return el('p', { class: 'sub', id: id }, title + ': no interval has enough values for it (docs/report.md, "Enough samples").');
      }
      // A marker on each point when there are few (one interval is a point).
      series.forEach(function (s) { s.markers = iv.length <= 60; });
      var c = new Chart({
        id: id, title: title, desc: desc, xType: 'lin', xMin: 0, xMax: end, xLabel: 'seconds since the measured phase began',
        yLabel: yLabel, series: series, bands: bands, hlines: hlines || [], nearest: 'x', zoom: zoom,
        hover: function (si, pi) { return hover(series[si].idx ? series[si].idx[pi] : pi); },
        table: { caption: title, head: ['interval start (s)'].concat(head), rows: iv.map(function (v, i) { return [num(v.start_s)].concat(row(v, i)); }) }
      });
      charts.push(c); zoom.charts.push(c);
      return c.fig;
    };
    var perS = function (n) { return n / width; };
    var out = [zoom.controls()];
    out.push(ts('ts-latency', 'Latency per interval (by completion time)',
      'p50, p99 and max latency of each interval\'s successes, ms, each where the successes are enough for it (p99: 100); shaded: where the generator fell behind its schedule.', 'latency (ms)',
      [mkIf('p50', COLORS[0], 'p50', okOf, function (v) { return v.p50; }),
        mkIf('p99', COLORS[1], 'p99', okOf, function (v) { return v.p99; }),
        mkIf('max', COLORS[2], 'max', okOf, function (v) { return v.max; })],
      function (i) { var v = iv[i]; return when(i) + ' · p50 ' + qs(v.ok, 'p50', v.p50, 'ms') + ' · p99 ' + qs(v.ok, 'p99', v.p99, 'ms') + ' · max ' + qs(v.ok, 'max', v.max, 'ms') + ' · ok ' + cnt(v.ok); },
      ['ok', 'p50 ms', 'p99 ms', 'max ms'], function (v) { return [cnt(v.ok), qs(v.ok, 'p50', v.p50), qs(v.ok, 'p99', v.p99), qs(v.ok, 'max', v.max)]; }));
    // Stages and traces: the offered rate moves, so it is a series (each
    // interval's mean offered rate), not a line at the run's mean.
    var moving = offeredPerInterval(r, width);
    var rateSeries = [{ name: 'sent/s', color: COLORS[0], pts: mk(function (v) { return perS(v.sent); }) },
      { name: 'ok/s', color: COLORS[3], pts: mk(function (v) { return perS(v.ok); }) }];
    if (moving) rateSeries.push({ name: 'offered/s', color: COLORS[5], dashed: true, pts: mk(function (v, i) { return moving[i]; }) });
    out.push(ts('ts-rate', 'Requests per second, per interval',
      'Requests sent and succeeded in each interval, divided by its width; the offered rate is dashed' +
        (moving ? (r.live ? ' (the requests scheduled in each interval, per second).' : r.arrival.trace ? ' (the trace\'s due requests per second of each interval).' : ' (the stages\' rate, averaged over each interval).') : '.'), 'requests/s',
      rateSeries,
      function (i) {
        var v = iv[i];
        return when(i) + ' · sent ' + cnt(v.sent) + ' · ok ' + cnt(v.ok) + ' (sent/s ' + num(perS(v.sent)) + ', ok/s ' + num(perS(v.ok)) + ')' +
          (moving ? ' · offered ' + num(moving[i], 'req/s') : '');
      },
      moving ? ['sent', 'ok', 'offered req/s'] : ['sent', 'ok'],
      function (v, i) { return [cnt(v.sent), cnt(v.ok)].concat(moving ? [num(moving[i])] : []); },
      moving ? []
        : r.sessions && r.sessions.planned_turns
          ? [{ y: r.sessions.offered_turns_per_s, label: 'planned turns ' + num(r.sessions.offered_turns_per_s, 'req/s') }]
          : r.offered_rps > 0 ? [{ y: r.offered_rps, label: 'offered ' + num(r.offered_rps, 'req/s') }] : []));
    out.push(ts('ts-errors', 'Errors, drops and waits per interval',
      'Failed requests (all kinds; by kind in the totals below), requests dropped above --max-in-flight, never sent, and that waited for a connection.', 'requests',
      [{ name: 'errors', color: COLORS[2], pts: mk(function (v) { return v.errors; }) },
        { name: 'dropped', color: COLORS[1], pts: mk(function (v) { return v.dropped; }) },
        { name: 'unsent', color: COLORS[4], pts: mk(function (v) { return v.unsent; }) },
        { name: 'waited', color: COLORS[5], pts: mk(function (v) { return v.waited; }) }],
      function (i) { var v = iv[i]; return when(i) + ' · errors ' + cnt(v.errors) + ' · dropped ' + cnt(v.dropped) + ' · unsent ' + cnt(v.unsent) + ' · waited ' + cnt(v.waited); },
      ['errors', 'dropped', 'unsent', 'waited'], function (v) { return [cnt(v.errors), cnt(v.dropped), cnt(v.unsent), cnt(v.waited)]; }));
    out.push(ts('ts-lag', 'Send lag p99 per interval', 'How late the generator sent (actual - intended send), p99 of each interval with enough sends for one (100), ms.', 'send lag (ms)',
      [mkIf('send lag p99', COLORS[4], 'p99', sentOf, function (v) { return v.send_lag_p99; })],
      function (i) { return when(i) + ' · send lag p99 ' + qs(iv[i].sent, 'p99', iv[i].send_lag_p99, 'ms'); },
      ['send lag p99 ms'], function (v) { return [qs(v.sent, 'p99', v.send_lag_p99)]; }));
    out.push(ts('ts-cpu', 'Generator CPU per interval', 'Share of the pacing threads\' time spent working (busy-wait excluded), 0 to 1; near 1 the generator was CPU-bound.', 'work CPU (0..1)',
      [{ name: 'work_cpu', color: COLORS[5], pts: mk(function (v) { return v.work_cpu; }) }],
      function (i) { return when(i) + ' · work_cpu ' + num(iv[i].work_cpu) + ' (' + pct(iv[i].work_cpu) + ' of the time)'; },
      ['work_cpu'], function (v) { return [num(v.work_cpu)]; }));
    out = out.concat(flowSeries(r, iv, ts, mk, when, perS));
    if (r.generator.behind.length) {
      var list = el('ul', { class: 'lines', id: 'behind-list' }, r.generator.behind.map(function (b) {
        return el('li', null, num(b.from_s, 's') + ' to ' + num(b.until_s, 's') + ', ' + cnt(b.intervals, 'interval') + ', ' + b.cause + ': ' + b.detail);
      }));
      out.push(el('h3', null, 'Where the generator fell behind'));
      out.push(r.generator.behind.length > 10
        ? el('details', null, el('summary', null, cnt(r.generator.behind.length, 'stretch', 'stretches') + ' (shaded on the charts above)'), list)
        : list);
    }
    return out;
  }

  // The streams' TTFT and tokens/s, the requests in flight and the bytes
  // moved, per interval, drawn with timeSeries' helpers (absent from
  // reports older than these fields).
  function flowSeries(r, iv, ts, mk, when, perS) {
    var out = [], has = function (v) { return v !== undefined && v !== null; };
    var ti = iv.map(function (v, i) { return i; }).filter(function (i) { return has(iv[i].ttft_p50_ms); });
    var some = function (f) { return mk(f).filter(function (p, i) { return has(iv[i].ttft_p50_ms); }); };
    if (isStream(r) && ti.length) {
      out.push(ts('ts-ttft', 'TTFT per interval (by first-output time)',
        'p50 and p99 time to first token of the streams whose first output came in each interval, ms.', 'TTFT (ms)',
        [{ name: 'TTFT p50', color: COLORS[0], pts: some(function (v) { return v.ttft_p50_ms; }) },
          { name: 'TTFT p99', color: COLORS[1], pts: some(function (v) { return v.ttft_p99_ms; }) }],
        function (k) { var v = iv[ti[k]]; return when(ti[k]) + ' · TTFT p50 ' + num(v.ttft_p50_ms) + ' ms · p99 ' + num(v.ttft_p99_ms) + ' ms · max ' + num(v.ttft_max_ms) + ' ms'; },
        ['TTFT p50 ms', 'TTFT p99 ms', 'TTFT max ms'], function (v) { return [num(v.ttft_p50_ms), num(v.ttft_p99_ms), num(v.ttft_max_ms)]; }));
    }
    if (isStream(r) && iv.length && has(iv[0].output_tokens_per_s)) {
      out.push(ts('ts-tokens', 'Output tokens per second, per interval',
        'Output tokens of the streams that succeeded in each interval (by completion time), divided by its width.', 'tokens/s',
        [{ name: 'tokens/s', color: COLORS[3], pts: mk(function (v) { return v.output_tokens_per_s; }) }],
        function (i) { return when(i) + ' · tokens/s ' + num(iv[i].output_tokens_per_s); },
        ['output tokens/s'], function (v) { return [num(v.output_tokens_per_s)]; }));
    }
    if (iv.length && has(iv[0].in_flight)) {
      out.push(ts('ts-inflight', 'Requests in flight at the end of each interval',
        'Requests sent and not yet ended (sent minus ok and errors so far) at each interval\'s end.', 'requests',
        [{ name: 'in flight', color: COLORS[5], pts: mk(function (v) { return v.in_flight; }) }],
        function (i) { return when(i) + ' · in flight at its end ' + iv[i].in_flight; },
        ['in flight'], function (v) { return [num(v.in_flight)]; }));
    }
    if (r.transfer && iv.length && has(iv[0].bytes_received)) {
      var t = r.transfer;
      out.push(el('p', { id: 'transfer' }, 'Transfer: received ' + fmtBytes(t.received_bytes) + ' (' + fmtBytes(Math.round(t.received_per_s)) + '/s), sent ' +
        fmtBytes(t.sent_bytes) + ' (' + fmtBytes(Math.round(t.sent_per_s)) + '/s) over the real window of ' + num(r.window.window_s, 's') + '.'));
      out.push(ts('ts-transfer', 'Bytes per second, per interval',
        'Bytes read and written in each interval (response and request heads and bodies as on the wire; over TLS after decryption), divided by its width.', 'bytes/s',
        [{ name: 'received/s', color: COLORS[0], pts: mk(function (v) { return perS(v.bytes_received); }) },
          { name: 'sent/s', color: COLORS[4], pts: mk(function (v) { return perS(v.bytes_sent); }) }],
        function (i) { var v = iv[i]; return when(i) + ' · received ' + fmtBytes(v.bytes_received) + ' · sent ' + fmtBytes(v.bytes_sent); },
        ['received', 'sent'], function (v) { return [fmtBytes(v.bytes_received), fmtBytes(v.bytes_sent)]; }));
    }
    return out;
  }

  function streams(r) {
    var m = r.metrics, w = r.workload, out = [];
    out.push(el('div', { class: 'stats' },
      stat('output', num(r.output_tokens_per_s, 'tokens/s')),
      stat('in-schedule output', num(r.window.in_schedule_output_tokens_per_s, 'tokens/s')),
      stat('goodput', pct(r.goodput)), stat('good rate', num(r.window.goodput_rps, 'req/s')),
      stat('good', cnt(r.requests.good, 'request')), stat('ok without [DONE]', cnt(r.requests.ok_without_done))));
    var slo = [['latency', r.slo.latency_ms, m.latency], ['ttft', r.slo.ttft_ms, m.ttft], ['itl', r.slo.itl_ms, m.itl], ['tpot', r.slo.tpot_ms, m.tpot]];
    var set = slo.filter(function (s) { return s[1] !== null; });
    out.push(el('p', null, set.length
      ? 'Goodput ' + pct(r.goodput) + ' (' + cnt(r.requests.good) + ' of ' + cnt(r.requests.scheduled) + ' scheduled requests met every SLO: ' +
        set.map(function (s) { return s[0] + ' ≤ ' + num(s[1], 'ms'); }).join(', ') + ').'
      : 'No SLO set: goodput is ok / scheduled = ' + pct(r.goodput) + '.'));
    if (set.length) {
      out.push(table('SLOs against the distributions (ms)', ['metric', 'SLO', 'p50', 'p90', 'p99', 'max'],
        set.map(function (s) { return [s[0], num(s[1]), mq(s[2], 'p50'), mq(s[2], 'p90'), mq(s[2], 'p99'), mq(s[2], 'max')]; }), 'slo-table'));
    }
    var line = function (key, bound) { return bound === null ? null : { y: bound, label: key + ' SLO ' + num(bound, 'ms') }; };
    out.push(pctChart('pct-stream-first', 'Time to first token, first answer token, and end to end, by percentile',
      'From the intended send time, ms; dashed: the SLO bounds.',
      [['ttft', 'TTFT', m.ttft], ['ttfat', 'TTFAT', m.ttfat, true], ['latency', 'E2E latency', m.latency]],
      [line('ttft', r.slo.ttft_ms), line('latency', r.slo.latency_ms)].filter(Boolean)));
    out.push(pctChart('pct-stream-tokens', 'Inter-token latency and time per output token, by percentile',
      'ITL per token (each chunk\'s gap spread over its tokens) and per chunk, TPOT (decode pace), and the tail after the last token, ms.',
      [['itl', 'ITL (per token)', m.itl], ['itl_chunk', 'ITL (per chunk)', m.itl_chunk, true], ['tpot', 'TPOT', m.tpot], ['tail', 'tail', m.tail]],
      [line('itl', r.slo.itl_ms), line('tpot', r.slo.tpot_ms)].filter(Boolean)));
    out.push(pctTable('Stream metrics (ms) of the JSON report',
      ['ttft', 'ttfat', 'itl', 'itl_chunk', 'tpot', 'tail', 'latency'].map(function (k) { return [k, METRIC_NAMES[k], m[k]]; }), 'ms', 'stream-metrics'));
    if (w) {
      out.push(el('h3', null, 'Token distributions'));
      out.push(dl([['endpoint', w.endpoint], ['model', w.model + ' (from ' + w.model_source + ')'], ['prompts', w.prompts],
        ['distinct requests', cnt(w.distinct_requests)]]));
      var dist = function (id, title, d) {
        if (!d.count) return el('p', { class: 'sub' }, title + ': none recorded.');
        return chart({
          id: id, title: title, desc: 'Requests per token-count bucket (upper bound of the bucket); ' + cnt(d.count, 'request') + ', ' + cnt(d.total, 'token') + ' in all.',
          xType: 'lin', xMin: 0, xMax: niceMax(1.1 * d.max), xLabel: 'tokens', yLabel: 'requests', nearest: 'x',
          series: [{ name: 'requests', color: COLORS[0], bars: true, pts: d.buckets.map(function (b) { return [Math.min(b[0], d.max), b[1]]; }) }],
          hover: function (si, pi) { var b = d.buckets[pi]; return 'tokens ≤ ' + cnt(b[0]) + ': ' + cnt(b[1], 'request'); },
          table: { caption: title, head: ['bucket upper bound (tokens)', 'requests'], rows: d.buckets.map(function (b) { return [cnt(b[0]), cnt(b[1])]; }) }
        });
      };
      out.push(dist('dist-input', 'Input tokens per request', w.input_tokens),
        dist('dist-output', 'Output tokens per successful request', w.output_tokens));
      out.push(table('Token counts (tokens per request)', ['', 'requests', 'total', 'min', 'mean', 'p50', 'p90', 'p99', 'max'],
        [['input', w.input_tokens], ['output', w.output_tokens]].map(function (p) {
          var d = p[1];
          var c = function (stat) { return shown(d.count, stat) ? cnt(d[stat]) : '-'; };
          return [p[0], cnt(d.count), cnt(d.total), c('min'), qs(d.count, 'mean', d.mean), c('p50'), c('p90'), c('p99'), c('max')];
        }), 'token-counts'));
    }
    // compat: a list of views; reports of older versions hold one view or null.
    var views = Array.isArray(r.compat) ? r.compat : (r.compat ? [r.compat] : []);
    views.forEach(function (cp) { out.push(compatView(r, cp)); });
    return out;
  }

  // A compat metric's unit: aiperf's throughput metrics are tokens/s, the
  // rest ms.
  function compatUnit(key) { return /throughput/.test(key) ? 'tokens/s' : 'ms'; }
  // One --metrics-compat view: the peer's metrics (ms, and tokens/s apart),
  // its rates, metronome's own beside them, one chart per unit.
  function compatView(r, cp) {
    var m = r.metrics, keys = Object.keys(cp.metrics);
    var ms = keys.filter(function (k) { return compatUnit(k) === 'ms'; });
    var tps = keys.filter(function (k) { return compatUnit(k) !== 'ms'; });
    var rows = function (ks) { return ks.map(function (k) { return [k, k, cp.metrics[k]]; }); };
    var out = [el('h3', { id: 'compat-' + cp.peer }, 'As ' + cp.peer + ' defines them (--metrics-compat)')];
    out.push(el('ul', { class: 'lines' },
      el('li', null, cp.peer + ': request throughput ' + num(cp.request_throughput_rps, 'req/s') + ', output throughput ' +
        num(cp.output_throughput_tokens_per_s, 'tokens/s') +
        (cp.window_s ? ' over ' + num(cp.window_s, 's') + (cp.peer === 'aiperf' ? " (aiperf's phase window)" : '') : '') + '.'),
      el('li', null, 'metronome: throughput ' + num(r.throughput_rps, 'ok/s') + ', output ' + num(r.output_tokens_per_s, 'tokens/s') + '.')));
    out.push(pctTable(cp.peer + ' (ms)', rows(ms), 'ms', 'compat-' + cp.peer + '-ms'));
    if (tps.length) out.push(pctTable(cp.peer + ' (tokens/s)', rows(tps), 'tokens/s', 'compat-' + cp.peer + '-tps'));
    out.push(el('details', null, el('summary', null, 'metronome\'s own metrics beside them'),
      pctTable('metronome (ms)', ['ttft', 'itl', 'tpot', 'latency', 'service_time'].map(function (k) { return [k, METRIC_NAMES[k], m[k]]; }))));
    out.push(pctChart('pct-compat-' + cp.peer, 'The ' + cp.peer + ' metrics by percentile (ms)',
      'The same run, measured as ' + cp.peer + ' defines each metric, ms.', rows(ms)));
    if (tps.length) {
      out.push(pctChart('pct-compat-' + cp.peer + '-tps', 'The ' + cp.peer + ' throughput metrics by percentile (tokens/s)',
        'Per-request output token rates as ' + cp.peer + ' defines them, tokens/s.', rows(tps), [], 'tokens/s'));
    }
    out.push(el('ul', { class: 'lines' }, cp.notes.map(function (n) { return el('li', null, n); }),
      cp.sources.map(function (s) { return el('li', null, 'source: ' + s); })));
    return el('section', { class: 'compat' }, out);
  }

  function config(r, rm, meta) {
    var g = r.generator, cn = r.connections;
    var pairs = [
      ['target', r.target], ['engine', r.engine], ['model', r.model],
      ['protocol', (r.protocol || 'not recorded') + (cn.tls_versions ? ', ' + Object.keys(cn.tls_versions).join(' ') + ' ALPN ' + Object.keys(cn.alpn || {}).join(' ') : '') +
        (cn.h2 ? ', at most ' + cnt(cn.h2.peak_streams, 'stream') + ' at once per connection (client cap ' + cnt(cn.h2.client_max_streams) + ', server ' + (cn.h2.server_max_streams === null ? 'unlimited' : cnt(cn.h2.server_max_streams)) + ')' : '')],
      ['arrival', r.arrival.process + (r.arrival.burst_size !== null ? ', burst size ' + cnt(r.arrival.burst_size) : '') +
        (r.arrival.burstiness !== null ? ', burstiness ' + num(r.arrival.burstiness) : '')],
      r.sessions && r.sessions.planned_turns
        ? ['offered rate', num(r.offered_rps, 'sessions/s') + ' (' + num(r.sessions.offered_turns_per_s, 'req/s') + ' in planned turns)']
        : ['offered rate', num(r.offered_rps, 'req/s') + offeredShape(r)], ['duration', num(r.duration_s, 's') + ' (planned ' + num(r.planned_duration_s, 's') + ')'],
      ['warmup', num(r.warmup_s, 's')], ['seed', raw(rm.seed)], ['shard', r.shard],
      r.closed_workers ? ['closed workers', cnt(r.closed_workers)] : null,
      ['start', raw(r.start_time + ' (start_unix_ns ' + rm.start_unix_ns + ')')], ['start_at', r.start_at === null ? 'not set' : raw(r.start_at)],
      ['start offset', num(r.start_offset_ns / 1e6, 'ms')], ['run id', raw(r.run_id)],
      ['threads', cnt(g.threads)], ['generator CPU', num(g.cpu_s, 's') + ' (spin ' + num(g.spin_s, 's') + '; ' + num(g.cpu_us_per_request, 'µs/request') + ', work ' + num(g.work_us_per_request, 'µs/request') + ')'],
      ['connections', 'opened ' + cnt(g.connections_opened) + ', peak ' + cnt(g.peak_connections) + ', closed idle ' + cnt(g.connections_closed_idle) + ', unsolicited ' + cnt(g.connections_unsolicited) +
        (cn.tls ? '; TLS' + (cn.insecure ? ' (unverified)' : '') + ', resumed ' + cnt(cn.tls_resumed) : '')],
      cn.connect ? ['connect time', 'p50 ' + num(cn.connect.p50, 'ms') + ', max ' + num(cn.connect.max, 'ms')] : null,
      cn.tls_handshake ? ['TLS handshake', 'p50 ' + num(cn.tls_handshake.p50, 'ms') + ', max ' + num(cn.tls_handshake.max, 'ms')] : null,
      ['SLOs', ['latency', 'ttft', 'itl', 'tpot'].filter(function (k) { return r.slo[k + '_ms'] !== null; })
        .map(function (k) { return k + ' ' + num(r.slo[k + '_ms'], 'ms'); }).join(', ') || 'none'],
      ['thresholds', r.thresholds.map(function (t) { return t.expr; }).join('  ') || 'none'],
      meta.command === null ? ['command line (reconstructed)', el('code', null, rm.equivalent)]
        : ['command line' + (r.shard_starts && r.shard_starts.length && r.argv ? ' (shard ' + r.shard_starts[0].shard + '\'s)' : ''), el('code', null, meta.command)],
      ['page drawn by', 'metronome ' + meta.version]
    ];
    return [dl(pairs), el('details', null, el('summary', null, 'Errors by kind, status and cause'),
      table(null, ['errors', 'count'], Object.keys(r.errors.by_kind).map(function (k) { return [k, cnt(r.errors.by_kind[k])]; })),
      table(null, ['status', 'count'], Object.keys(r.errors.by_status).map(function (k) { return [k, cnt(r.errors.by_status[k])]; })),
      table(null, ['bad framing cause', 'count'], Object.keys(r.errors.bad_framing_by_cause).map(function (k) { return [k, cnt(r.errors.bad_framing_by_cause[k])]; })),
      table(null, ['unsent reason', 'count'], Object.keys(r.errors.unsent_by_reason).map(function (k) { return [k, cnt(r.errors.unsent_by_reason[k])]; })))];
  }

  function shardsView(r, rm) {
    if (!rm.shards.length) return null;
    return [el('h2', null, 'Shards'),
      el('p', null, 'This report merges ' + cnt(rm.shards.length) + ' shard reports (' + r.shard + '). Each shard\'s schedule zero and when it began pacing:'),
      table('Per shard, in the order merged', ['shard', 'start (schedule zero)', 'start_unix_ns', 'start offset (ms)', 'began after the first (ms)'],
        rm.shards.map(function (s) {
          return [s.shard, raw(s.start_time), raw(s.start_unix_ns), num(s.start_offset_ns / 1e6), num(s.began_after_first_ns / 1e6)];
        }), 'shards-table')];
  }

  // Conversations: how the sessions went (started = completed + abandoned
  // + cut + overflowed + unfinished); the turns are the request rows.
  function sessionsView(r) {
    var s = r.sessions;
    if (!s) return null;
    return [el('h2', { id: 'sessions' }, 'Sessions'),
      el('p', null, cnt(s.started, 'session') + ' started: ' + cnt(s.completed) + ' completed, ' + cnt(s.abandoned) + ' abandoned, ' +
        cnt(s.cut) + ' cut at the end of the schedule, ' + cnt(s.overflowed) + ' overflowed, ' + cnt(s.unfinished) + ' unfinished; ' +
        cnt(s.follow_ups, 'follow-up turn') + ' came due; think time ' + num(s.think_time_ms, 'ms') + '.'),
      table('Sessions of the JSON report', ['', 'value'], [
        ['started', cnt(s.started)], ['completed', cnt(s.completed)], ['abandoned', cnt(s.abandoned)], ['cut', cnt(s.cut)],
        ['overflowed', cnt(s.overflowed)], ['unfinished', cnt(s.unfinished)], ['follow-up turns', cnt(s.follow_ups)],
        ['think time', num(s.think_time_ms, 'ms')], ['planned turns', cnt(s.planned_turns)],
        ['planned turns per second', num(s.offered_turns_per_s, 'req/s')]], 'sessions-table')];
  }

  // --requests / --targets (and conversations' turns): a row per name.
  function requestsView(r) {
    var rows = r.by_request || [];
    if (!rows.length) return null;
    var conv = !!r.sessions;
    var ttft = rows.some(function (q) { return q.ttft; });
    var head = [conv ? 'turn' : 'request', 'scheduled', 'sent', 'ok', 'errors', 'dropped', 'unsent', 'latency p50 ms', 'latency p99 ms',
      'latency max ms', 'service p50 ms', 'send lag p99 ms'].concat(ttft ? ['TTFT p50 ms', 'TTFT p99 ms'] : []).concat(['errors by kind']);
    var body = rows.map(function (q) {
      var kinds = Object.keys(q.errors_by_kind).filter(function (k) { return q.errors_by_kind[k] > 0; });
      return [q.name, cnt(q.scheduled), cnt(q.sent), cnt(q.ok), cnt(q.errors), cnt(q.dropped), cnt(q.unsent),
        mq(q.latency, 'p50'), mq(q.latency, 'p99'), mq(q.latency, 'max'), mq(q.service_time, 'p50'), mq(q.send_lag, 'p99')]
        .concat(ttft ? [q.ttft ? mq(q.ttft, 'p50') : '—', q.ttft ? mq(q.ttft, 'p99') : '—'] : [])
        .concat([kinds.length ? kinds.map(function (k) { return k + ' ' + cnt(q.errors_by_kind[k]); }).join(', ') : 'none']);
    });
    return [el('h2', { id: 'by-request' }, conv ? 'Turns' : 'Requests by name'),
      el('p', { class: 'sub' }, conv
        ? 'One row per turn of the conversations (turn-1 is every session\'s first), each request counted under its turn.'
        : 'One row per request name of the mix, each request counted under the name it sent; the rows add up to the totals.'),
      table(conv ? 'Per turn' : 'Per request name', head, body, 'by-request-table'),
      pctChart('pct-by-request', (conv ? 'Latency per turn' : 'Latency per request name') + ' by percentile',
        'Latency from the intended send time of each name\'s successes, ms.',
        rows.map(function (q) { return [q.name, q.name, q.latency]; }))];
  }

  // --stages: a row per stage, and the ramp as offered against achieved.
  function stagesView(r) {
    var st = r.stages || [];
    if (!st.length) return null;
    var ramp = r.arrival.ramp, w0 = r.warmup_s;
    var n = /^\d+\/\d+$/.test(r.shard) ? Number(r.shard.split('/')[1]) : 1;
    // The offered rate at each stage's ends (and within an exponential
    // ramp), x in seconds since the measured phase began.
    var offered = [];
    st.forEach(function (s) {
      var k = ramp === 'exponential' && s.start_rps !== s.target_rps ? 16 : 1;
      for (var i = 0; i <= k; i++) {
        var t = s.from_s + (s.until_s - s.from_s) * i / k;
        offered.push([t - w0, stageRate(s, ramp, t) / n]);
      }
    });
    var iv = r.intervals;
    var width = iv.length > 1 ? iv[1].start_s - iv[0].start_s : (r.duration_s || 1);
    var sent = iv.map(function (v) { return [v.start_s + width / 2, v.sent / width]; });
    var ok = iv.map(function (v) { return [v.start_s + width / 2, v.ok / width]; });
    var xMin = Math.min(0, offered[0][0]), xMax = Math.max(offered[offered.length - 1][0], iv.length ? iv[iv.length - 1].start_s + width : 0);
    var series = [{ name: 'offered', color: COLORS[5], dashed: true, pts: offered },
      { name: 'achieved (sent/s)', color: COLORS[0], markers: iv.length <= 60, pts: sent },
      { name: 'ok/s', color: COLORS[3], markers: iv.length <= 60, pts: ok }];
    var stageOf = function (x) {
      for (var i = 0; i < st.length; i++) { if (x + w0 >= st[i].from_s && x + w0 < st[i].until_s) return 'stage ' + (i + 1) + ' · '; }
      return '';
    };
    return [el('h2', { id: 'stages' }, 'Stages'),
      el('p', { class: 'sub' }, cnt(st.length, 'stage') + (ramp ? ', ' + ramp + ' ramps' : '') +
        '; times from the schedule\'s zero (the warmup\'s start), each request counted in the stage of its intended time.'),
      table('Per stage', ['stage', 'from s', 'until s', 'offered req/s (start → end)', 'offered requests', 'scheduled', 'sent', 'ok', 'errors',
        'dropped', 'unsent', 'p50 ms', 'p99 ms'],
      st.map(function (s, i) {
        return [String(i + 1), num(s.from_s), num(s.until_s), num(s.start_rps) + ' → ' + num(s.target_rps), num(s.offered), cnt(s.scheduled),
          cnt(s.sent), cnt(s.ok), cnt(s.errors), cnt(s.dropped), cnt(s.unsent), qs(s.ok, 'p50', s.p50), qs(s.ok, 'p99', s.p99)];
      }), 'stages-table'),
      chart({
        id: 'stages-rate', title: 'The ramp: offered against achieved over time',
        desc: 'The stages\' offered rate (dashed' + (n > 1 ? ', this shard\'s share' : '') + '), and the requests sent and succeeded per second of each interval.',
        xType: 'lin', xMin: xMin, xMax: xMax, xLabel: 'seconds since the measured phase began', yLabel: 'requests/s', nearest: 'xy', series: series,
        hover: function (si, pi) {
          var p = series[si].pts[pi];
          return stageOf(p[0]) + num(p[0], 's') + ' · ' + series[si].name + ' ' + num(p[1], 'req/s');
        },
        table: {
          caption: 'Offered rate at the stages\' ends (req/s)', head: ['seconds', 'offered req/s'],
          rows: offered.map(function (p) { return [num(p[0]), num(p[1])]; })
        }
      })];
  }

  function reportView(r, rm, meta) {
    var m = r.metrics;
    var core = [['latency', METRIC_NAMES.latency, m.latency], ['service_time', METRIC_NAMES.service_time, m.service_time],
      ['send_lag', METRIC_NAMES.send_lag, m.send_lag]];
    if (m.latency_corrected) core.push(['latency_corrected', METRIC_NAMES.latency_corrected, m.latency_corrected]);
    return [
      verdict(r, meta),
      shardsView(r, rm),
      el('h2', null, 'Latency by percentile'),
      pctChart('pct-latency', 'Latency, service time and send lag by percentile',
        'Latency from the intended send time, service time from the actual send, and send lag (actual - intended), ms, from the report\'s histograms.',
        core, r.slo.latency_ms !== null ? [{ y: r.slo.latency_ms, label: 'latency SLO ' + num(r.slo.latency_ms, 'ms') }] : []),
      pctTable('Percentiles (ms) of the JSON report', core, 'ms', 'latency-table'),
      sessionsView(r),
      requestsView(r),
      stagesView(r),
      isStream(r) ? [el('h2', { id: 'streams' }, 'Streams'), streams(r)] : null,
      el('h2', { id: 'over-time' }, 'Over time'),
      timeSeries(r),
      el('h2', { id: 'configuration' }, 'Configuration'),
      config(r, rm, meta)
    ];
  }

  // ---- a sweep ---------------------------------------------------------------------
  // Stream sweeps: TTFT and ITL (p50, p99) and output tokens/s against
  // the offered rate, one point per step with values.
  function sweepStreams(steps, xMax, vl, stepRow) {
    var out = [];
    [['sweep-ttft', 'ttft', 'TTFT against offered rate', 'TTFT (ms)'], ['sweep-itl', 'itl', 'ITL (per token) against offered rate', 'ITL (ms)']].forEach(function (d) {
      var idx = steps.map(function (s, i) { return i; }).filter(function (i) { return steps[i].metrics[d[1]].count > 0; });
      var picks = [['p50', 'p50'], ['p99', 'p99']];
      // Each pick at the steps whose values are enough for it (the one rule).
      var at = picks.map(function (p) { return idx.filter(function (i) { return shown(steps[i].metrics[d[1]].count, p[1]); }); });
      out.push(chart({
        id: d[0], title: d[2], xType: 'lin', yType: 'log', yToggle: true, xMin: 0, xMax: xMax, nearest: 'xy', vlines: vl,
        desc: d[1].toUpperCase() + ' p50 and p99, ms, one point per step with streams.', xLabel: 'offered rate (requests/s)', yLabel: d[3],
        series: picks.map(function (p, k) {
          return { name: p[0], color: COLORS[k], markers: true, pts: at[k].map(function (i) { return [steps[i].offered_rps, steps[i].metrics[d[1]][p[1]]]; }) };
        }),
        hover: function (si, pi) { var s = steps[at[si][pi]]; return stepRow(s) + ' · ' + picks[si][0] + ' ' + num(s.metrics[d[1]][picks[si][1]], 'ms'); },
        table: {
          caption: d[2] + ' (ms)', head: ['offered req/s', 'p50', 'p90', 'p99', 'max', 'count'],
          rows: idx.map(function (i) { var m = steps[i].metrics[d[1]]; return [num(steps[i].offered_rps), mq(m, 'p50'), mq(m, 'p90'), mq(m, 'p99'), mq(m, 'max'), cnt(m.count)]; })
        }
      }));
    });
    out.push(chart({
      id: 'sweep-tokens', title: 'Output tokens per second against offered rate', xType: 'lin', xMin: 0, xMax: xMax, nearest: 'xy', vlines: vl,
      desc: 'Output tokens per second of the real window at each step.', xLabel: 'offered rate (requests/s)', yLabel: 'tokens/s',
      series: [{ name: 'output tokens/s', color: COLORS[3], markers: true, pts: steps.map(function (s) { return [s.offered_rps, s.output_tokens_per_s]; }) }],
      hover: function (si, pi) { var s = steps[pi]; return stepRow(s) + ' · output ' + num(s.output_tokens_per_s, 'tokens/s'); },
      table: {
        caption: 'Output tokens per second per step', head: ['offered req/s', 'output tokens/s'],
        rows: steps.map(function (s) { return [num(s.offered_rps), num(s.output_tokens_per_s)]; })
      }
    }));
    return out;
  }

  // The runs of `run --repeat N`: each headline number's mean and 95%
  // confidence interval (the document's own summary, computed in Rust),
  // then one row per run from its report (latency p99 the exact one when
  // the report kept it, as the text's run lines).
  function repeatView(d) {
    var unitOf = function (n) {
      return n === 'achieved_rps' ? 'req/s' : n === 'throughput_rps' ? 'ok/s' : n === 'output_tokens_per_s' ? 'tokens/s' :
        (n === 'error_rate' || n === 'goodput') ? 'fraction' : 'ms';
    };
    var summary = table('Mean and 95% confidence interval over the runs', ['number', 'mean', '± 95% CI', 'sd', 'min', 'max'],
      d.summary.map(function (st) {
        return [st.name + ' (' + unitOf(st.name) + ')', num(st.mean), num(st.ci95), num(st.sd), num(st.min), num(st.max)];
      }), 'repeat-summary');
    var runs = table('The runs', ['run', 'seed', 'scheduled', 'ok', 'errors', 'achieved req/s', 'latency p50 ms', 'latency p99 ms', 'latency max ms', 'warnings'],
      d.runs.map(function (r, i) {
        var m = r.metrics.latency;
        return [String(i + 1), raw(String(r.seed)), cnt(r.requests.scheduled), cnt(r.requests.ok), cnt(r.requests.errors), num(r.achieved_rps),
          num(m.p50), num(m.exact ? m.exact.p99 : m.p99), num(m.max), cnt(r.generator.warnings.length)];
      }), 'repeat-runs');
    var warned = [];
    d.runs.forEach(function (r, i) {
      r.generator.warnings.forEach(function (w) { warned.push(el('li', null, el('span', { class: 'warn-t' }, 'Run ' + (i + 1)), ' ', w)); });
    });
    return [el('section', { id: 'repeat', 'aria-label': 'Runs' }, summary, runs,
      warned.length ? el('details', null, el('summary', null, 'Warnings of the runs'), el('ul', null, warned)) : null)];
  }

  function sweepView(sw, meta, app) {
    var steps = sw.steps, knee = sw.knee;
    var out = [];
    var head = knee === null
      ? 'Every step kept up with its schedule.'
      : 'Knee at ' + num(steps[knee].offered_rps, 'req/s') + ' (step ' + (knee + 1) + ' of ' + steps.length + '): ' + meta.knee_reason + '.';
    out.push(el('section', { class: knee === null ? 'verdict' : 'verdict fail', id: 'verdict', 'aria-label': 'Verdict' },
      el('p', { class: 'head' }, head),
      meta.descheduled_steps.length ? el('p', null, 'The host took the generator\'s CPU (descheduled) at ' +
        meta.descheduled_steps.map(function (i) { return num(steps[i].offered_rps); }).join(', ') + ' req/s: sends there were late by the host, not the target.') : null,
      sw.auto ? el('p', null, 'sweep --auto: the synchronous probe (one request at a time) sustained ' + num(sw.auto.synchronous_rps, 'req/s') +
        ', the throughput probe (' + cnt(sw.auto.throughput_workers, 'worker') + ') ' + num(sw.auto.throughput_rps, 'req/s') +
        '; the ' + cnt(steps.length, 'step') + ' are spaced evenly between them.') : null));
    var picks = [['p50', 'p50'], ['p99', 'p99'], ['p99.9', 'p999']];
    var idx = picks.map(function (p) { return steps.map(function (s, i) { return i; }).filter(function (i) { return shown(steps[i].metrics.latency.count, p[1]); }); });
    var vl = knee === null ? [] : [{ x: steps[knee].offered_rps, label: 'knee: ' + num(steps[knee].offered_rps, 'req/s') }];
    var xMax = niceMax(1.05 * steps.reduce(function (a, s) { return Math.max(a, s.offered_rps); }, 0));
    var stepRow = function (s) { return 'offered ' + num(s.offered_rps, 'req/s'); };
    out.push(chart({
      id: 'sweep-latency', title: 'Latency against offered rate', xType: 'lin', yType: 'log', yToggle: true, xMin: 0, xMax: xMax,
      desc: 'Latency p50, p99 (steps of 100+ samples) and p99.9 (1000+ samples), ms, one point per step; the knee is the dashed line.',
      xLabel: 'offered rate (requests/s)', yLabel: 'latency (ms)', nearest: 'xy', vlines: vl,
      series: picks.map(function (p, k) {
        return { name: p[0], color: COLORS[k], markers: true, dashed: k === 2, pts: idx[k].map(function (i) { return [steps[i].offered_rps, steps[i].metrics.latency[p[1]]]; }) };
      }),
      hover: function (si, pi) { var s = steps[idx[si][pi]]; return stepRow(s) + ' · ' + picks[si][0] + ' ' + num(s.metrics.latency[picks[si][1]], 'ms'); },
      table: {
        caption: 'Latency per step (ms)', head: ['offered req/s', 'p50', 'p99', 'p99.9', 'max', 'count'],
        rows: steps.map(function (s) { var m = s.metrics.latency; return [num(s.offered_rps), mq(m, 'p50'), mq(m, 'p99'), mq(m, 'p999'), mq(m, 'max'), cnt(m.count)]; })
      }
    }));
    out.push(chart({
      id: 'sweep-rate', title: 'Achieved against offered rate', xType: 'lin', xMin: 0, xMax: xMax, diagonal: true,
      desc: 'Requests sent per second (achieved) and successes per second of the real window (throughput) at each step; dashed: achieved = offered.',
      xLabel: 'offered rate (requests/s)', yLabel: 'requests/s', nearest: 'xy', vlines: vl,
      series: [{ name: 'achieved', color: COLORS[0], markers: true, pts: steps.map(function (s) { return [s.offered_rps, s.achieved_rps]; }) },
        { name: 'throughput (ok/s)', color: COLORS[3], markers: true, pts: steps.map(function (s) { return [s.offered_rps, s.throughput_rps]; }) }],
      hover: function (si, pi) { var s = steps[pi]; return stepRow(s) + (si === 0 ? ' · achieved ' + num(s.achieved_rps, 'req/s') : ' · throughput ' + num(s.throughput_rps, 'req/s')); },
      table: {
        caption: 'Rates per step (req/s)', head: ['offered', 'achieved', 'throughput'],
        rows: steps.map(function (s) { return [num(s.offered_rps), num(s.achieved_rps), num(s.throughput_rps)]; })
      }
    }));
    var streamSteps = steps.some(isStream);
    if (streamSteps) out.push(sweepStreams(steps, xMax, vl, stepRow));
    out.push(table('Steps', ['offered req/s', 'achieved req/s', 'errors', 'dropped', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'lag p99 ms', 'kept up'],
      steps.map(function (s, i) {
        var m = s.metrics.latency;
        return [num(s.offered_rps) + (knee === i ? ' (knee)' : ''), num(s.achieved_rps), cnt(s.requests.errors), cnt(s.requests.dropped),
          mq(m, 'p50'), mq(m, 'p99'), mq(m, 'p999'), mq(m, 'max'), mq(s.metrics.send_lag, 'p99'), meta.runs[i].fell_behind === null ? 'yes' : 'no: ' + meta.runs[i].fell_behind];
      }), 'steps-table'));
    if (meta.command !== null) out.push(el('p', null, 'Command line: ', el('code', null, meta.command)));
    var sel = el('select', { id: 'step-select', 'aria-label': 'Step to show' }, steps.map(function (s, i) {
      return el('option', { value: String(i) }, 'step ' + (i + 1) + ': ' + num(s.offered_rps, 'req/s') + (knee === i ? ' (knee)' : ''));
    }));
    var first = knee === null ? steps.length - 1 : knee;
    sel.value = String(first);
    var holder = el('div', { id: 'step-view' });
    var showStep = function (i) {
      charts = charts.filter(function (c) { return c.spec.id.indexOf('sweep-') === 0; });
      while (holder.firstChild) holder.removeChild(holder.firstChild);
      add(holder, reportView(steps[i], meta.runs[i], meta));
      var v = holder.querySelector('#verdict');
      if (v) v.id = 'step-verdict';
    };
    sel.addEventListener('change', function () { showStep(Number(sel.value)); });
    out.push(el('h2', null, 'One step in detail'), el('div', { class: 'controls' }, el('label', { for: 'step-select' }, 'Step: '), sel), holder);
    add(app, out);
    if (steps.length) showStep(first);
  }

  // ---- the self-check ------------------------------------------------------------------
  // For tests and for anyone curious: which charts were drawn with how many
  // points, what the hover shows for one point of each (after a synthetic
  // mousemove), errors and blocked requests, written as JSON into #selfcheck.
  function selfCheck(kind) {
    check.kind = kind;
    check.charts = charts.map(function (c) {
      return { id: c.spec.id, series: c.spec.series.map(function (s, i) { return { name: s.name, points: c.drawn[i] }; }) };
    });
    charts.forEach(function (c) {
      var si = 0;
      while (si < c.spec.series.length - 1 && !c.spec.series[si].pts.length) si++;
      var pts = c.spec.series[si].pts;
      if (!pts.length) return;
      var pi = Math.floor(pts.length / 2);
      if (c.spec.id === 'ts-latency') {
        pts.forEach(function (p, i) { if (p[1] > pts[pi][1]) pi = i; });
      }
      var at = c.client(si, pi);
      c.svg.dispatchEvent(new MouseEvent('mousemove', { clientX: at[0], clientY: at[1], bubbles: true }));
      var got = c.cur || [-1, -1];
      check.hovers.push({ chart: c.spec.id, series: got[0], index: got[1], target: [si, pi], text: c.tip.textContent });
    });
    // The keyboard: ArrowRight on the first time series moves the read-out
    // to the next point.
    var kc = charts.filter(function (c) { return c.spec.zoom; })[0];
    if (kc && kc.cur) {
      kc.svg.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
      check.keyboard = { chart: kc.spec.id, series: kc.cur[0], index: kc.cur[1], text: kc.tip.textContent };
    }
    // Zoom by dragging across the middle third of the first time series,
    // record what every chart of its group drew, then reset.
    var zc = charts.filter(function (c) { return c.spec.zoom; })[0];
    if (zc) {
      var z = zc.spec.zoom, box = zc.svg.getBoundingClientRect();
      var at = function (vx) { return box.left + vx * box.width / VW; }, y = box.top + (MT + PH / 2) * box.height / VH;
      zc.svg.dispatchEvent(new MouseEvent('mousedown', { clientX: at(ML + PW / 3), clientY: y, bubbles: true }));
      zc.svg.dispatchEvent(new MouseEvent('mousemove', { clientX: at(ML + 2 * PW / 3), clientY: y, bubbles: true, buttons: 1 }));
      window.dispatchEvent(new MouseEvent('mouseup', { clientX: at(ML + 2 * PW / 3), clientY: y }));
      check.zoom = {
        full: z.full.slice(), domain: zc.domain.slice(),
        charts: z.charts.map(function (c) { return { id: c.spec.id, points: c.drawn.slice() }; })
      };
      z.set(z.full);
      check.zoom.reset = z.charts.map(function (c) { return { id: c.spec.id, points: c.drawn.slice() }; });
    }
    var v = document.getElementById('verdict');
    check.verdict = v ? v.textContent : '';
    // Every table with an id: its body's cells as shown.
    check.tables = {};
    Array.prototype.forEach.call(document.querySelectorAll('table[id]'), function (t) {
      check.tables[t.id] = Array.prototype.map.call(t.querySelectorAll('tbody tr'), function (tr) {
        return Array.prototype.map.call(tr.children, function (c) { return c.textContent; });
      });
    });
    // The page's text as a person reads it (hover read-outs, chart ticks
    // and labels included), less what is shown as recorded: code (command
    // lines, threshold expressions) and .raw (seeds, times, ids).
    var copy = app.cloneNode(true);
    Array.prototype.forEach.call(copy.querySelectorAll('code, .raw'), function (e) { e.parentNode.removeChild(e); });
    // Tables wider than their box (a sideways scroll bar).
    check.overflow = Array.prototype.filter.call(document.querySelectorAll('.scroll'), function (d) {
      return d.scrollWidth > d.clientWidth + 1;
    }).map(function (d) { var t = d.querySelector('table'); return (t && t.id) || (t && t.caption ? t.caption.textContent : '?'); });
    var words = [], walk = document.createTreeWalker(copy, NodeFilter.SHOW_TEXT);
    while (walk.nextNode()) words.push(walk.currentNode.nodeValue);
    var text = words.join(' ');
    // Rust's sentences use the same formatter; only the RFC 3339 times
    // they quote (a merge's skew warning) are not figures.
    text = text.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, ' ');
    check.text = text;
    check.resources = performance.getEntriesByType('resource').length;
  }

  // ---- a run as it goes (--dashboard) ------------------------------------------
  // The dashboard's page before the run ends: the progress, the warnings as
  // they arise and the report's own time series, drawn from the interval
  // rows /live.json serves (the JSON report's `intervals`, as they close);
  // the offered line is each interval's scheduled sends. Polled four times a
  // second; redrawn when a row arrives. Once the run is over the page
  // reloads into the --html page. #selfcheck says how many polls were drawn.
  function liveView(meta, app) {
    document.title = 'metronome live: ' + meta.target;
    var head = el('h1', null, 'metronome: starting');
    var bar = el('div', { class: 'live-bar' }, el('div', { id: 'live-done' }));
    var prog = el('p', { id: 'live-progress' });
    var warn = el('ul', { class: 'lines', id: 'live-warnings' });
    var series = el('div', { id: 'live-series' });
    add(app, [head, el('p', { class: 'sub' }, (meta.label ? meta.label + ' · ' : '') + meta.target + ' · ' + num(meta.offered_rps, 'req/s') +
      ' offered, ' + meta.process + ' arrivals, ' + meta.engine + ' engine · drawn by metronome ' + meta.version), bar, prog, warn, series]);
    var updates = 0, shown = '', warned = '', failed = 0, pageId = null;
    var mark = el('pre', { id: 'selfcheck', 'aria-hidden': 'true' });
    document.body.appendChild(mark);
    function draw(d) {
      // Another run on a shared dashboard (a sweep's next step): its page.
      if (pageId === null) pageId = d.page;
      else if (d.page !== pageId) { location.reload(); return; }
      updates += 1;
      head.textContent = 'metronome: ' + (d.done ? 'done' : 'running');
      var share = d.duration_s > 0 ? Math.min(1, d.elapsed_s / d.duration_s) : 1;
      document.getElementById('live-done').style.width = (100 * share).toFixed(1) + '%';
      var last = d.rows.length ? d.rows[d.rows.length - 1] : null;
      // Past the schedule's end the run waits for the replies still in
      // flight (and a backlog's sends): the drain, not more schedule.
      var when = d.duration_s > 0 && d.elapsed_s > d.duration_s
        ? 'draining (the schedule of ' + num(d.duration_s, 's') + ' is over; waiting for the replies in flight)'
        : num(d.elapsed_s, 's') + ' of ' + num(d.duration_s, 's');
      prog.textContent = when + ': ' + cnt(d.sent, 'request') + ' sent, ' +
        cnt(d.ok) + ' ok, ' + cnt(d.errors, 'error') + '; send lag p99 of the last interval ' + (last ? num(last.send_lag_p99, 'ms') : '-') + '.';
      // Redrawn whenever the text changes (a stretch that grows keeps the
      // count of warnings but not its words), with the rows it comes from.
      var words = JSON.stringify(d.warnings);
      if (words !== warned) {
        warned = words;
        while (warn.firstChild) warn.removeChild(warn.firstChild);
        d.warnings.forEach(function (w) { warn.appendChild(el('li', null, el('span', { class: 'warn-t' }, 'Warning'), ' ', w)); });
      }
      var drawn = JSON.stringify([d.rows.length, (d.drain || []).length, d.behind,
        d.rows.filter(function (v) { return v['final'] === false; }).length]);
      if (drawn !== shown) {
        shown = drawn;
        charts.length = 0;
        while (series.firstChild) series.removeChild(series.firstChild);
        add(series, timeSeries({ live: true, intervals: d.rows, drain: d.drain || [], duration_s: d.duration_s, generator: { behind: d.behind || [] }, stages: [], arrival: {},
          workload: meta.stream ? {} : null, metrics: { ttft: { count: 0 } } }));
      }
      mark.textContent = JSON.stringify({ ok: check.errors.length === 0 && check.csp.length === 0, kind: 'live', errors: check.errors,
        csp: check.csp, updates: updates, rows: d.rows.length, sent: d.sent, done: d.done, last: last,
        charts: charts.map(function (c) { return c.spec.id; }) });
    }
    function tick() {
      fetch('/live.json', { cache: 'no-store' }).then(function (r) { return r.json(); }).then(function (d) {
        try { draw(d); } catch (e) {
          check.errors.push('live: ' + (e && e.stack ? e.stack : e));
          mark.textContent = JSON.stringify({ ok: false, kind: 'live', errors: check.errors, updates: updates, done: false });
        }
        failed = 0;
        if (d.done) { location.reload(); return; }
        setTimeout(tick, 250);
      }, function () {
        // A poll that got no answer (a loaded host, or the run is gone):
        // tried again each second, for a minute.
        failed += 1;
        head.textContent = 'metronome: ' + (failed < 60 ? 'no answer from the run, trying again' : 'disconnected');
        if (failed < 60) setTimeout(tick, 1000);
      });
    }
    tick();
  }

  var app = document.getElementById('app');
  var kind = '';
  try {
    var meta = JSON.parse(document.getElementById('page-meta').textContent);
    kind = meta.kind;
    while (app.firstChild) app.removeChild(app.firstChild);
    if (meta.kind === 'live') {
      NEED = meta.samples_needed;
      liveView(meta, app);
      return;
    }
    var data = JSON.parse(document.getElementById('report-data').textContent);
    NEED = (meta.kind === 'sweep' ? (data.steps[0] || {}).samples_needed
      : meta.kind === 'repeat' ? (data.runs[0] || {}).samples_needed : data.samples_needed) || {};
    if (meta.kind === 'repeat') {
      var target = data.runs[0] ? data.runs[0].target : '';
      document.title = 'metronome --repeat: ' + data.runs.length + ' runs of ' + target;
      add(app, [el('h1', null, 'metronome --repeat'), el('p', { class: 'sub' }, cnt(data.runs.length, 'run') + ' of ' + target +
        ' (run i with seed --seed + i) · drawn by metronome ' + meta.version)]);
      add(app, repeatView(data));
    } else if (meta.kind === 'sweep') {
      document.title = 'metronome sweep: ' + data.steps.length + ' steps against ' + (data.steps[0] ? data.steps[0].target : '');
      add(app, [el('h1', null, 'metronome sweep'), el('p', { class: 'sub' }, data.steps.length + ' steps against ' + (data.steps[0] ? data.steps[0].target : '') +
        ' · drawn by metronome ' + meta.version)]);
      sweepView(data, meta, app);
    } else {
      var r = data;
      document.title = 'metronome: ' + r.target + ' at ' + num(r.offered_rps) + ' req/s (' + r.arrival.process + ')';
      add(app, [el('h1', null, 'metronome report'), el('p', { class: 'sub' }, r.target + ' · ' + r.model + ' model, ' + r.arrival.process +
        ' arrivals, ' + r.engine + ' engine · ', raw(r.start_time), ' · run ', raw(r.run_id))]);
      add(app, reportView(r, meta.runs[0], meta));
    }
    check.ok = true;
  } catch (e) {
    check.errors.push('exception: ' + (e && e.stack ? e.stack : e));
    add(app, el('p', { class: 'fail-t' }, 'This page could not draw the report: ' + e));
  }
  try { selfCheck(kind); } catch (e) { check.errors.push('self-check: ' + e); }
  document.body.appendChild(el('pre', { id: 'selfcheck', 'aria-hidden': 'true' }, JSON.stringify(check)));
})();
