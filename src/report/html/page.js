// metronome's HTML report: draws hand-made SVG charts from the JSON report
// embedded in the page (#report-data) and the page's meta (#page-meta).
// No library, no network. Every number shown from the report is the JSON
// value itself (JavaScript's shortest round-trip form); derived figures
// (percentages, per-second rates of a count) are labelled as such.
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

  // ---- small helpers -------------------------------------------------------
  function num(v) { return v === null || v === undefined ? '—' : String(v); }
  function pct(v, digits) { return (100 * v).toFixed(digits === undefined ? 1 : digits) + '%'; }
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
  function table(caption, head, rows) {
    return el('div', { class: 'scroll' }, el('table', null,
      caption ? el('caption', null, caption) : null,
      el('thead', null, el('tr', null, head.map(function (h, i) {
        return el('th', { scope: 'col', class: i === 0 ? 'l' : null }, h);
      }))),
      el('tbody', null, rows.map(function (r) {
        return el('tr', null, r.map(function (c, i) { return el(i === 0 ? 'th' : 'td', i === 0 ? { scope: 'row' } : null, c); }));
      }))));
  }
  function stat(k, v) { return el('div', { class: 'stat' }, el('div', { class: 'k' }, k), el('div', { class: 'v num' }, v)); }
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
  function tick(v) { return String(Number(v.toPrecision(6))); }
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
  function pctOf(cum, total) {
    var p = 100 * cum / total;
    return p === 100 ? '100%' : String(Number(p.toFixed(4))) + '%';
  }
  var COLORS = ['var(--c0)', 'var(--c1)', 'var(--c2)', 'var(--c3)', 'var(--c4)', 'var(--c5)'];
  // A percentile chart of metrics [[key, label, Metric]].
  function pctChart(id, title, desc, metrics, hlines) {
    metrics = metrics.filter(function (m) { return m[2] && m[2].count > 0; });
    if (!metrics.length) return el('p', { class: 'sub' }, title + ': no values recorded.');
    var curves = metrics.map(function (m) { return curve(m[2]); });
    var most = metrics.reduce(function (a, m) { return Math.max(a, m[2].count); }, 1);
    var decades = Math.max(4, Math.min(6, Math.ceil(Math.log10(most))));
    var series = metrics.map(function (m, i) {
      return { name: m[1], color: COLORS[i % COLORS.length], pts: curves[i].pts, dashed: !!m[3] };
    });
    var cols = ['count', 'min', 'mean', 'p50', 'p90', 'p95', 'p99', 'p999', 'max'];
    return chart({
      id: id, title: title, desc: desc, xType: 'pct', yType: 'log', yToggle: true, xMin: 0, xMax: decades,
      xLabel: 'percentile (log scale of 1/(1-p); a curve ends at 1 - 1/count)', yLabel: 'ms',
      series: series, nearest: 'xy', hlines: hlines || [],
      hover: function (si, pi) {
        var m = metrics[si], inf = curves[si].info[pi], v = curves[si].pts[pi][1];
        if (pi === 0) return m[1] + ': min ' + num(v) + ' ms';
        return m[1] + ': ' + num(v) + ' ms at ' + pctOf(inf.cum, inf.total) + ' (' + inf.cum + ' of ' + inf.total + ' values at or below)';
      },
      table: {
        caption: 'Percentiles (ms), as in the JSON report', head: ['metric'].concat(cols.map(function (k) { return k === 'p999' ? 'p99.9' : k; })),
        rows: metrics.map(function (m) { return [m[1]].concat(cols.map(function (k) { return num(m[2][k]); })); })
      }
    });
  }
  function pctTable(caption, metrics) {
    var cols = ['count', 'min', 'mean', 'p50', 'p90', 'p95', 'p99', 'p999', 'max'];
    return table(caption, ['metric (ms)'].concat(cols.map(function (k) { return k === 'p999' ? 'p99.9' : k; })),
      metrics.filter(function (m) { return m[2]; }).map(function (m) {
        return [m[1]].concat(cols.map(function (k) { return num(m[2][k]); }));
      }));
  }

  // ---- one report ------------------------------------------------------------------
  function verdict(r, meta) {
    var q = r.requests, failed = r.thresholds.filter(function (t) { return !t.passed; });
    var warnings = r.generator.warnings, behind = r.generator.behind;
    var bad = failed.length > 0 || (q.ok === 0 && q.sent > 0);
    var cls = bad ? 'verdict fail' : (warnings.length || behind.length || r.interrupted || r.partial) ? 'verdict warn' : 'verdict';
    var head;
    if (q.ok === 0 && q.sent > 0) head = 'No request succeeded.';
    else if (failed.length) head = 'Thresholds breached: ' + failed.length + ' of ' + r.thresholds.length + '.';
    else if (r.thresholds.length) head = 'All ' + r.thresholds.length + ' thresholds held.';
    else head = 'No thresholds set.';
    if (warnings.length) head += ' ' + warnings.length + (warnings.length === 1 ? ' warning.' : ' warnings.');
    // Conversations: the schedule offers sessions, the requests are their turns.
    var conv = r.sessions && r.sessions.planned_turns ? r.sessions : null;
    var rate = r.model === 'closed'
      ? 'Closed loop, ' + r.closed_workers + ' workers: achieved ' + num(r.achieved_rps) + ' req/s (no schedule: a stall silently lowers the rate).'
      : conv
        ? 'Offered ' + num(r.offered_rps) + ' sessions/s (' + num(conv.planned_turns) + ' turns planned: ' +
          num(conv.offered_turns_per_s) + ' req/s), achieved ' + num(r.achieved_rps) + ' req/s (' +
          (conv.offered_turns_per_s > 0 ? pct(r.achieved_rps / conv.offered_turns_per_s) : '—') +
          ' of the planned turns) over ' + num(r.duration_s) + ' s.'
        : 'Offered ' + num(r.offered_rps) + ' req/s, achieved ' + num(r.achieved_rps) + ' req/s (' +
          (r.offered_rps > 0 ? pct(r.achieved_rps / r.offered_rps) : '—') + ' of offered) over ' + num(r.duration_s) + ' s.';
    var kinds = Object.keys(r.errors.by_kind).filter(function (k) { return r.errors.by_kind[k] > 0; });
    var lines = [];
    lines.push(el('li', null, rate));
    lines.push(el('li', null, 'Throughput ' + num(r.throughput_rps) + ' ok/s over the real window of ' + num(r.window.window_s) + ' s.'));
    lines.push(el('li', null, 'ok ' + q.ok + ', errors ' + q.errors + ', dropped ' + q.dropped + ', unsent ' + q.unsent +
      ' (scheduled ' + q.scheduled + ', sent ' + q.sent + ', timeouts ' + q.timeouts + ', retried ' + q.retried + ').'));
    if (kinds.length) {
      lines.push(el('li', null, 'Errors by kind: ' + kinds.map(function (k) { return k + ' ' + r.errors.by_kind[k]; }).join(', ') +
        (Object.keys(r.errors.by_status).length ? '; by status: ' + Object.keys(r.errors.by_status).map(function (s) { return s + ' ' + r.errors.by_status[s]; }).join(', ') : '') + '.'));
    }
    r.thresholds.forEach(function (t) {
      lines.push(el('li', null, el('span', { class: t.passed ? 'pass' : 'fail-t' }, t.passed ? 'PASS' : 'FAIL'), ' ',
        el('code', null, t.expr), ': measured ' + num(t.value)));
    });
    warnings.forEach(function (w) { lines.push(el('li', null, el('span', { class: 'warn-t' }, 'Warning'), ' ', w)); });
    // A stretch is usually a warning already (build.rs words the first
    // few so); list up to three others here, and all under "Over time".
    var others = behind.filter(function (b) {
      return !warnings.some(function (w) { return w.indexOf(b.detail) >= 0; });
    });
    others.slice(0, 3).forEach(function (b) {
      lines.push(el('li', null, el('span', { class: 'warn-t' }, 'Behind schedule'), ' ' + num(b.from_s) + ' s to ' + num(b.until_s) +
        ' s (' + b.cause + '): ' + b.detail));
    });
    if (others.length > 3) {
      lines.push(el('li', null, el('span', { class: 'warn-t' }, 'Behind schedule'), ' in ' + (others.length - 3) +
        ' more stretches (' + behind.length + ' in all, listed under Over time).'));
    }
    if (r.interrupted) lines.push(el('li', null, 'Interrupted by a signal: the report covers what was measured until then.'));
    if (r.partial) lines.push(el('li', null, 'Partial merge (' + r.shard + '): the figures cover only these shards.'));
    var box = el('section', { class: cls, id: 'verdict', 'aria-label': 'Verdict' },
      el('p', { class: 'head' }, head), el('ul', { class: 'lines' }, lines),
      el('div', { class: 'stats' },
        conv ? stat('offered sessions/s', num(r.offered_rps)) : stat('offered req/s', num(r.offered_rps)),
        conv ? stat('planned turns/s', num(conv.offered_turns_per_s)) : null,
        stat('achieved req/s', num(r.achieved_rps)),
        stat('ok', num(q.ok)), stat('errors', num(q.errors)), stat('dropped', num(q.dropped)),
        stat('latency p50 ms', num(r.metrics.latency.p50)), stat('latency p99 ms', num(r.metrics.latency.p99)),
        stat('latency max ms', num(r.metrics.latency.max)), stat('error rate', num(r.error_rate)),
        stat('goodput', num(r.goodput))));
    return box;
  }

  function timeSeries(r) {
    var iv = r.intervals;
    if (!iv.length) return el('p', { class: 'sub' }, 'No intervals recorded.');
    var width = iv.length > 1 ? iv[1].start_s - iv[0].start_s : (r.duration_s || 1);
    var end = iv[iv.length - 1].start_s + width;
    var zoom = new ZoomGroup([0, end]);
    var xs = iv.map(function (i) { return i.start_s + width / 2; });
    var bands = r.generator.behind.map(function (b) { return { from: b.from_s, to: b.until_s, label: 'behind: ' + b.cause }; });
    var when = function (i) {
      var b = r.generator.behind.filter(function (b) { return iv[i].start_s >= b.from_s && iv[i].start_s < b.until_s; })[0];
      return 'interval ' + num(iv[i].start_s) + ' s (' + num(width) + ' s wide' + (b ? ', behind: ' + b.cause : '') + ')';
    };
    var mk = function (f) { return iv.map(function (v, i) { return [xs[i], f(v)]; }); };
    var ts = function (id, title, desc, yLabel, series, hover, head, row, hlines) {
      // A marker on each point when there are few (one interval is a point).
      series.forEach(function (s) { s.markers = iv.length <= 60; });
      var c = new Chart({
        id: id, title: title, desc: desc, xType: 'lin', xMin: 0, xMax: end, xLabel: 'seconds since the measured phase began',
        yLabel: yLabel, series: series, bands: bands, hlines: hlines || [], nearest: 'x', zoom: zoom,
        hover: function (si, pi) { return hover(pi); },
        table: { caption: title, head: ['interval start (s)'].concat(head), rows: iv.map(function (v) { return [num(v.start_s)].concat(row(v)); }) }
      });
      charts.push(c); zoom.charts.push(c);
      return c.fig;
    };
    var perS = function (n) { return n / width; };
    var out = [zoom.controls()];
    out.push(ts('ts-latency', 'Latency per interval (by completion time)',
      'p50, p99 and max latency of each interval\'s successes, ms; shaded: where the generator fell behind its schedule.', 'latency (ms)',
      [{ name: 'p50', color: COLORS[0], pts: mk(function (v) { return v.p50; }) },
        { name: 'p99', color: COLORS[1], pts: mk(function (v) { return v.p99; }) },
        { name: 'max', color: COLORS[2], pts: mk(function (v) { return v.max; }) }],
      function (i) { var v = iv[i]; return when(i) + ' · p50 ' + num(v.p50) + ' ms · p99 ' + num(v.p99) + ' ms · max ' + num(v.max) + ' ms · ok ' + v.ok; },
      ['ok', 'p50 ms', 'p99 ms', 'max ms'], function (v) { return [num(v.ok), num(v.p50), num(v.p99), num(v.max)]; }));
    out.push(ts('ts-rate', 'Requests per second, per interval',
      'Requests sent and succeeded in each interval, divided by its width; the offered rate is the dashed line.', 'requests/s',
      [{ name: 'sent/s', color: COLORS[0], pts: mk(function (v) { return perS(v.sent); }) },
        { name: 'ok/s', color: COLORS[3], pts: mk(function (v) { return perS(v.ok); }) }],
      function (i) { var v = iv[i]; return when(i) + ' · sent ' + v.sent + ' · ok ' + v.ok + ' (sent/s ' + num(perS(v.sent)) + ', ok/s ' + num(perS(v.ok)) + ')'; },
      ['sent', 'ok'], function (v) { return [num(v.sent), num(v.ok)]; },
      r.sessions && r.sessions.planned_turns
        ? [{ y: r.sessions.offered_turns_per_s, label: 'planned turns ' + num(r.sessions.offered_turns_per_s) + ' req/s' }]
        : r.offered_rps > 0 ? [{ y: r.offered_rps, label: 'offered ' + num(r.offered_rps) + ' req/s' }] : []));
    out.push(ts('ts-errors', 'Errors, drops and waits per interval',
      'Failed requests (all kinds; by kind in the totals below), requests dropped above --max-in-flight, never sent, and that waited for a connection.', 'requests',
      [{ name: 'errors', color: COLORS[2], pts: mk(function (v) { return v.errors; }) },
        { name: 'dropped', color: COLORS[1], pts: mk(function (v) { return v.dropped; }) },
        { name: 'unsent', color: COLORS[4], pts: mk(function (v) { return v.unsent; }) },
        { name: 'waited', color: COLORS[5], pts: mk(function (v) { return v.waited; }) }],
      function (i) { var v = iv[i]; return when(i) + ' · errors ' + v.errors + ' · dropped ' + v.dropped + ' · unsent ' + v.unsent + ' · waited ' + v.waited; },
      ['errors', 'dropped', 'unsent', 'waited'], function (v) { return [num(v.errors), num(v.dropped), num(v.unsent), num(v.waited)]; }));
    out.push(ts('ts-lag', 'Send lag p99 per interval', 'How late the generator sent (actual - intended send), p99 of each interval, ms.', 'send lag (ms)',
      [{ name: 'send lag p99', color: COLORS[4], pts: mk(function (v) { return v.send_lag_p99; }) }],
      function (i) { return when(i) + ' · send lag p99 ' + num(iv[i].send_lag_p99) + ' ms'; },
      ['send lag p99 ms'], function (v) { return [num(v.send_lag_p99)]; }));
    out.push(ts('ts-cpu', 'Generator CPU per interval', 'Share of the pacing threads\' time spent working (busy-wait excluded), 0 to 1; near 1 the generator was CPU-bound.', 'work CPU (0..1)',
      [{ name: 'work_cpu', color: COLORS[5], pts: mk(function (v) { return v.work_cpu; }) }],
      function (i) { return when(i) + ' · work_cpu ' + num(iv[i].work_cpu) + ' (' + pct(iv[i].work_cpu) + ')'; },
      ['work_cpu'], function (v) { return [num(v.work_cpu)]; }));
    out = out.concat(flowSeries(r, iv, ts, mk, when, perS));
    if (r.generator.behind.length) {
      var list = el('ul', { class: 'lines', id: 'behind-list' }, r.generator.behind.map(function (b) {
        return el('li', null, num(b.from_s) + ' s to ' + num(b.until_s) + ' s, ' + b.intervals + ' intervals, ' + b.cause + ': ' + b.detail);
      }));
      out.push(el('h3', null, 'Where the generator fell behind'));
      out.push(r.generator.behind.length > 10
        ? el('details', null, el('summary', null, r.generator.behind.length + ' stretches (shaded on the charts above)'), list)
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
      out.push(el('p', { id: 'transfer' }, 'Transfer: received ' + num(t.received_bytes) + ' bytes (' + num(t.received_per_s) + ' bytes/s), sent ' +
        num(t.sent_bytes) + ' bytes (' + num(t.sent_per_s) + ' bytes/s) over the real window of ' + num(r.window.window_s) + ' s.'));
      out.push(ts('ts-transfer', 'Bytes per second, per interval',
        'Bytes read and written in each interval (response and request heads and bodies as on the wire; over TLS after decryption), divided by its width.', 'bytes/s',
        [{ name: 'received/s', color: COLORS[0], pts: mk(function (v) { return perS(v.bytes_received); }) },
          { name: 'sent/s', color: COLORS[4], pts: mk(function (v) { return perS(v.bytes_sent); }) }],
        function (i) { var v = iv[i]; return when(i) + ' · received ' + v.bytes_received + ' B · sent ' + v.bytes_sent + ' B'; },
        ['bytes received', 'bytes sent'], function (v) { return [num(v.bytes_received), num(v.bytes_sent)]; }));
    }
    return out;
  }

  function streams(r) {
    var m = r.metrics, w = r.workload, out = [];
    out.push(el('div', { class: 'stats' },
      stat('output tokens/s', num(r.output_tokens_per_s)),
      stat('in-schedule tokens/s', num(r.window.in_schedule_output_tokens_per_s)),
      stat('goodput', num(r.goodput)), stat('good req/s', num(r.window.goodput_rps)),
      stat('good', num(r.requests.good)), stat('ok without [DONE]', num(r.requests.ok_without_done))));
    var slo = [['latency', r.slo.latency_ms, m.latency], ['ttft', r.slo.ttft_ms, m.ttft], ['itl', r.slo.itl_ms, m.itl], ['tpot', r.slo.tpot_ms, m.tpot]];
    var set = slo.filter(function (s) { return s[1] !== null; });
    out.push(el('p', null, set.length
      ? 'Goodput ' + num(r.goodput) + ' (' + r.requests.good + ' of ' + r.requests.scheduled + ' scheduled requests met every SLO: ' +
        set.map(function (s) { return s[0] + ' ≤ ' + num(s[1]) + ' ms'; }).join(', ') + ').'
      : 'No SLO set: goodput is ok / scheduled = ' + num(r.goodput) + '.'));
    if (set.length) {
      out.push(table('SLOs against the distributions (ms)', ['metric', 'SLO', 'p50', 'p90', 'p99', 'max'],
        set.map(function (s) { return [s[0], num(s[1]), num(s[2].p50), num(s[2].p90), num(s[2].p99), num(s[2].max)]; })));
    }
    var line = function (key, bound) { return bound === null ? null : { y: bound, label: key + ' SLO ' + num(bound) + ' ms' }; };
    out.push(pctChart('pct-stream-first', 'Time to first token, first answer token, and end to end, by percentile',
      'From the intended send time, ms; dashed: the SLO bounds.',
      [['ttft', 'TTFT', m.ttft], ['ttfat', 'TTFAT', m.ttfat, true], ['latency', 'E2E latency', m.latency]],
      [line('ttft', r.slo.ttft_ms), line('latency', r.slo.latency_ms)].filter(Boolean)));
    out.push(pctChart('pct-stream-tokens', 'Inter-token latency and time per output token, by percentile',
      'ITL per token (each chunk\'s gap spread over its tokens) and per chunk, TPOT (decode pace), and the tail after the last token, ms.',
      [['itl', 'ITL (per token)', m.itl], ['itl_chunk', 'ITL (per chunk)', m.itl_chunk, true], ['tpot', 'TPOT', m.tpot], ['tail', 'tail', m.tail]],
      [line('itl', r.slo.itl_ms), line('tpot', r.slo.tpot_ms)].filter(Boolean)));
    out.push(pctTable('Stream metrics (ms), as in the JSON report',
      ['ttft', 'ttfat', 'itl', 'itl_chunk', 'tpot', 'tail', 'latency'].map(function (k) { return [k, METRIC_NAMES[k], m[k]]; })));
    if (w) {
      out.push(el('h3', null, 'Token distributions'));
      out.push(dl([['endpoint', w.endpoint], ['model', w.model + ' (from ' + w.model_source + ')'], ['prompts', w.prompts],
        ['distinct requests', num(w.distinct_requests)]]));
      var dist = function (id, title, d) {
        if (!d.count) return el('p', { class: 'sub' }, title + ': none recorded.');
        return chart({
          id: id, title: title, desc: 'Requests per token-count bucket (upper bound of the bucket); count ' + d.count + ', total ' + d.total + '.',
          xType: 'lin', xMin: 0, xMax: niceMax(1.1 * d.max), xLabel: 'tokens', yLabel: 'requests', nearest: 'x',
          series: [{ name: 'requests', color: COLORS[0], bars: true, pts: d.buckets.map(function (b) { return [Math.min(b[0], d.max), b[1]]; }) }],
          hover: function (si, pi) { var b = d.buckets[pi]; return 'tokens ≤ ' + b[0] + ': ' + b[1] + ' requests'; },
          table: { caption: title, head: ['bucket upper bound (tokens)', 'requests'], rows: d.buckets.map(function (b) { return [num(b[0]), num(b[1])]; }) }
        });
      };
      out.push(dist('dist-input', 'Input tokens per request', w.input_tokens),
        dist('dist-output', 'Output tokens per successful request', w.output_tokens));
      out.push(table('Token counts', ['', 'count', 'total', 'min', 'mean', 'p50', 'p90', 'p99', 'max'],
        [['input', w.input_tokens], ['output', w.output_tokens]].map(function (p) {
          var d = p[1];
          return [p[0], num(d.count), num(d.total), num(d.min), num(d.mean), num(d.p50), num(d.p90), num(d.p99), num(d.max)];
        })));
    }
    // compat: a list of views; reports of older versions hold one view or null.
    var views = Array.isArray(r.compat) ? r.compat : (r.compat ? [r.compat] : []);
    views.forEach(function (cp) {
      var keys = Object.keys(cp.metrics);
      out.push(el('h3', null, 'As ' + cp.peer + ' defines them (--metrics-compat)'));
      out.push(el('div', null,
        el('div', null, pctTable(cp.peer + ' (ms)', keys.map(function (k) { return [k, k, cp.metrics[k]]; })),
          el('p', null, 'request throughput ' + num(cp.request_throughput_rps) + ' req/s, output throughput ' + num(cp.output_throughput_tokens_per_s) + ' tokens/s' +
            (cp.window_s ? ' over ' + num(cp.window_s) + ' s' + (cp.peer === 'aiperf' ? " (aiperf's phase window)" : '') : ''))),
        el('div', null, pctTable('metronome (ms)', ['ttft', 'itl', 'tpot', 'latency', 'service_time'].map(function (k) { return [k, METRIC_NAMES[k], m[k]]; })),
          el('p', null, 'throughput ' + num(r.throughput_rps) + ' ok/s, output ' + num(r.output_tokens_per_s) + ' tokens/s'))));
      out.push(pctChart('pct-compat-' + cp.peer, 'The ' + cp.peer + ' metrics by percentile', 'The same run, measured as ' + cp.peer + ' defines each metric, ms' + (cp.peer === 'aiperf' ? ' (output_token_throughput_per_user, e2e_output_token_throughput: tokens/s).' : '.'),
        keys.map(function (k) { return [k, k, cp.metrics[k]]; })));
      out.push(el('ul', { class: 'lines' }, cp.notes.map(function (n) { return el('li', null, n); }),
        cp.sources.map(function (s) { return el('li', null, 'source: ' + s); })));
    });
    return out;
  }

  function config(r, rm, meta) {
    var g = r.generator, cn = r.connections;
    var pairs = [
      ['target', r.target], ['engine', r.engine], ['model', r.model],
      ['arrival', r.arrival.process + (r.arrival.burst_size !== null ? ', burst size ' + r.arrival.burst_size : '') +
        (r.arrival.burstiness !== null ? ', burstiness ' + num(r.arrival.burstiness) : '')],
      r.sessions && r.sessions.planned_turns
        ? ['offered rate', num(r.offered_rps) + ' sessions/s (' + num(r.sessions.offered_turns_per_s) + ' req/s in planned turns)']
        : ['offered rate', num(r.offered_rps) + ' req/s'], ['duration', num(r.duration_s) + ' s (planned ' + num(r.planned_duration_s) + ' s)'],
      ['warmup', num(r.warmup_s) + ' s'], ['seed', rm.seed], ['shard', r.shard],
      r.closed_workers ? ['closed workers', num(r.closed_workers)] : null,
      ['start', r.start_time + ' (start_unix_ns ' + rm.start_unix_ns + ')'], ['start_at', r.start_at === null ? 'not set' : r.start_at],
      ['start offset', num(r.start_offset_ns) + ' ns'], ['run id', r.run_id],
      ['threads', num(g.threads)], ['generator CPU', num(g.cpu_s) + ' s (spin ' + num(g.spin_s) + ' s; ' + num(g.cpu_us_per_request) + ' µs/request, work ' + num(g.work_us_per_request) + ' µs/request)'],
      ['connections', 'opened ' + g.connections_opened + ', peak ' + g.peak_connections + ', closed idle ' + g.connections_closed_idle + ', unsolicited ' + g.connections_unsolicited +
        (cn.tls ? '; TLS' + (cn.insecure ? ' (unverified)' : '') + ', resumed ' + cn.tls_resumed : '')],
      cn.connect ? ['connect time', 'p50 ' + num(cn.connect.p50) + ' ms, max ' + num(cn.connect.max) + ' ms'] : null,
      cn.tls_handshake ? ['TLS handshake', 'p50 ' + num(cn.tls_handshake.p50) + ' ms, max ' + num(cn.tls_handshake.max) + ' ms'] : null,
      ['SLOs', ['latency', 'ttft', 'itl', 'tpot'].filter(function (k) { return r.slo[k + '_ms'] !== null; })
        .map(function (k) { return k + ' ' + num(r.slo[k + '_ms']) + ' ms'; }).join(', ') || 'none'],
      ['thresholds', r.thresholds.map(function (t) { return t.expr; }).join('  ') || 'none'],
      ['command line', meta.command === null ? 'not recorded (page drawn from a saved report)' : el('code', null, meta.command)],
      ['equivalent command', el('code', null, rm.equivalent)],
      ['page drawn by', 'metronome ' + meta.version]
    ];
    return [dl(pairs), el('details', null, el('summary', null, 'Errors by kind, status and cause'),
      table(null, ['errors', 'count'], Object.keys(r.errors.by_kind).map(function (k) { return [k, num(r.errors.by_kind[k])]; })),
      table(null, ['status', 'count'], Object.keys(r.errors.by_status).map(function (k) { return [k, num(r.errors.by_status[k])]; })),
      table(null, ['bad framing cause', 'count'], Object.keys(r.errors.bad_framing_by_cause).map(function (k) { return [k, num(r.errors.bad_framing_by_cause[k])]; })),
      table(null, ['unsent reason', 'count'], Object.keys(r.errors.unsent_by_reason).map(function (k) { return [k, num(r.errors.unsent_by_reason[k])]; })))];
  }

  function shardsView(r, rm) {
    if (!rm.shards.length) return null;
    return [el('h2', null, 'Shards'),
      el('p', null, 'This report merges ' + rm.shards.length + ' shard reports (' + r.shard + '). Each shard\'s schedule zero and when it began pacing:'),
      table('Per shard, in the order merged', ['shard', 'start (schedule zero)', 'start_unix_ns', 'start offset (ns)', 'began after the first (ms)'],
        rm.shards.map(function (s) {
          return [s.shard, s.start_time, s.start_unix_ns, num(s.start_offset_ns), String(s.began_after_first_ns / 1e6)];
        }))];
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
        core, r.slo.latency_ms !== null ? [{ y: r.slo.latency_ms, label: 'latency SLO ' + num(r.slo.latency_ms) + ' ms' }] : []),
      pctTable('Percentiles (ms), as in the JSON report', core),
      isStream(r) ? [el('h2', { id: 'streams' }, 'Streams'), streams(r)] : null,
      el('h2', { id: 'over-time' }, 'Over time'),
      timeSeries(r),
      el('h2', { id: 'configuration' }, 'Configuration'),
      config(r, rm, meta)
    ];
  }

  // ---- a sweep ---------------------------------------------------------------------
  function sweepView(sw, meta, app) {
    var steps = sw.steps, knee = sw.knee;
    var out = [];
    var head = knee === null
      ? 'Every step kept up with its schedule.'
      : 'Knee at ' + num(steps[knee].offered_rps) + ' req/s (step ' + (knee + 1) + ' of ' + steps.length + '): ' + meta.knee_reason + '.';
    out.push(el('section', { class: knee === null ? 'verdict' : 'verdict fail', id: 'verdict', 'aria-label': 'Verdict' },
      el('p', { class: 'head' }, head),
      meta.descheduled_steps.length ? el('p', null, 'The host took the generator\'s CPU (descheduled) at ' +
        meta.descheduled_steps.map(function (i) { return num(steps[i].offered_rps); }).join(', ') + ' req/s: sends there were late by the host, not the target.') : null));
    var supported = function (m, q) { return m.count > 0 && m.count * (1 - q) >= 1 - 1e-9; };
    var picks = [['p50', 0.5, 'p50'], ['p99', 0.99, 'p99'], ['p99.9', 0.999, 'p999']];
    var idx = picks.map(function (p) { return steps.map(function (s, i) { return i; }).filter(function (i) { return supported(steps[i].metrics.latency, p[1]); }); });
    var vl = knee === null ? [] : [{ x: steps[knee].offered_rps, label: 'knee: ' + num(steps[knee].offered_rps) + ' req/s' }];
    var xMax = niceMax(1.05 * steps.reduce(function (a, s) { return Math.max(a, s.offered_rps); }, 0));
    var stepRow = function (s) { return 'offered ' + num(s.offered_rps) + ' req/s'; };
    out.push(chart({
      id: 'sweep-latency', title: 'Latency against offered rate', xType: 'lin', yType: 'log', yToggle: true, xMin: 0, xMax: xMax,
      desc: 'Latency p50, p99 (steps of 100+ samples) and p99.9 (1000+ samples), ms, one point per step; the knee is the dashed line.',
      xLabel: 'offered rate (requests/s)', yLabel: 'latency (ms)', nearest: 'xy', vlines: vl,
      series: picks.map(function (p, k) {
        return { name: p[0], color: COLORS[k], markers: true, dashed: k === 2, pts: idx[k].map(function (i) { return [steps[i].offered_rps, steps[i].metrics.latency[p[2]]]; }) };
      }),
      hover: function (si, pi) { var s = steps[idx[si][pi]]; return stepRow(s) + ' · ' + picks[si][0] + ' ' + num(s.metrics.latency[picks[si][2]]) + ' ms'; },
      table: {
        caption: 'Latency per step (ms)', head: ['offered req/s', 'p50', 'p99', 'p99.9', 'max', 'count'],
        rows: steps.map(function (s) { var m = s.metrics.latency; return [num(s.offered_rps), num(m.p50), num(m.p99), num(m.p999), num(m.max), num(m.count)]; })
      }
    }));
    out.push(chart({
      id: 'sweep-rate', title: 'Achieved against offered rate', xType: 'lin', xMin: 0, xMax: xMax, diagonal: true,
      desc: 'Requests sent per second (achieved) and successes per second of the real window (throughput) at each step; dashed: achieved = offered.',
      xLabel: 'offered rate (requests/s)', yLabel: 'requests/s', nearest: 'xy', vlines: vl,
      series: [{ name: 'achieved', color: COLORS[0], markers: true, pts: steps.map(function (s) { return [s.offered_rps, s.achieved_rps]; }) },
        { name: 'throughput (ok/s)', color: COLORS[3], markers: true, pts: steps.map(function (s) { return [s.offered_rps, s.throughput_rps]; }) }],
      hover: function (si, pi) { var s = steps[pi]; return stepRow(s) + (si === 0 ? ' · achieved ' + num(s.achieved_rps) : ' · throughput ' + num(s.throughput_rps)) + ' req/s'; },
      table: {
        caption: 'Rates per step (req/s)', head: ['offered', 'achieved', 'throughput'],
        rows: steps.map(function (s) { return [num(s.offered_rps), num(s.achieved_rps), num(s.throughput_rps)]; })
      }
    }));
    out.push(table('Steps', ['offered req/s', 'achieved req/s', 'errors', 'dropped', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'lag p99 ms', 'kept up'],
      steps.map(function (s, i) {
        var m = s.metrics.latency;
        return [num(s.offered_rps) + (knee === i ? ' (knee)' : ''), num(s.achieved_rps), num(s.requests.errors), num(s.requests.dropped),
          num(m.p50), num(m.p99), num(m.p999), num(m.max), num(s.metrics.send_lag.p99), meta.runs[i].fell_behind === null ? 'yes' : 'no: ' + meta.runs[i].fell_behind];
      })));
    if (meta.command !== null) out.push(el('p', null, 'Command line: ', el('code', null, meta.command)));
    var sel = el('select', { id: 'step-select', 'aria-label': 'Step to show' }, steps.map(function (s, i) {
      return el('option', { value: String(i) }, 'step ' + (i + 1) + ': ' + num(s.offered_rps) + ' req/s' + (knee === i ? ' (knee)' : ''));
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
    check.resources = performance.getEntriesByType('resource').length;
  }

  var app = document.getElementById('app');
  var kind = '';
  try {
    var data = JSON.parse(document.getElementById('report-data').textContent);
    var meta = JSON.parse(document.getElementById('page-meta').textContent);
    kind = meta.kind;
    while (app.firstChild) app.removeChild(app.firstChild);
    if (meta.kind === 'sweep') {
      document.title = 'metronome sweep: ' + data.steps.length + ' steps against ' + (data.steps[0] ? data.steps[0].target : '');
      add(app, [el('h1', null, 'metronome sweep'), el('p', { class: 'sub' }, data.steps.length + ' steps against ' + (data.steps[0] ? data.steps[0].target : '') +
        ' · drawn by metronome ' + meta.version)]);
      sweepView(data, meta, app);
    } else {
      var r = data;
      document.title = 'metronome: ' + r.target + ' at ' + num(r.offered_rps) + ' req/s (' + r.arrival.process + ')';
      add(app, [el('h1', null, 'metronome report'), el('p', { class: 'sub' }, r.target + ' · ' + r.model + ' model, ' + r.arrival.process +
        ' arrivals, ' + r.engine + ' engine · ' + r.start_time + ' · run ' + r.run_id)]);
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
