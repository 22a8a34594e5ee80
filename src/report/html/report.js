// slotest report.html: draws every `.chart` container from the embedded model with uPlot.
// Each drawn chart gets data-drawn="1" ("empty" where the run had nothing to plot); errors are
// shown in #errors and counted in body[data-errors]; body[data-done] marks the end.
(function () {
  "use strict";
  const errors = [];
  const box = document.getElementById("errors");
  function fail(msg) {
    errors.push(String(msg));
    box.hidden = false;
    box.textContent = errors.join("\n");
    document.body.dataset.errors = String(errors.length);
  }
  window.addEventListener("error", (e) => fail(e.message));

  const model = JSON.parse(document.getElementById("slotest-data").textContent);
  const C = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"];
  const GREY = "#777";
  const SLO = "#c0392b";
  const dpr = window.devicePixelRatio || 1;
  let drawn = 0;

  const fmt = (v, d) => (v == null || !isFinite(v) ? "-" : Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(d == null ? 2 : d));
  const line = (label, i, scale) => ({ label, stroke: C[i % C.length], width: 1.5, scale: scale || "y", value: (u, v) => fmt(v), points: { show: false } });
  const dots = (label, i, scale) => ({ label, stroke: C[i % C.length], fill: C[i % C.length], scale: scale || "y", paths: () => null, points: { show: true, size: 4 }, value: (u, v) => fmt(v) });
  const axisX = (label) => ({ label, stroke: "#333", grid: { stroke: "#eee" } });
  const axisY = (label, scale, side) => ({ label, scale: scale || "y", side: side || 3, stroke: "#333", grid: { show: !side, stroke: "#eee" }, size: 60 });

  // Vertical marks at x values and horizontal ones at y values, with labels.
  function marks(vlines, hlines) {
    return {
      hooks: {
        draw: (u) => {
          const ctx = u.ctx;
          const { left, top, width, height } = u.bbox;
          ctx.save();
          ctx.font = `${11 * dpr}px sans-serif`;
          ctx.lineWidth = dpr;
          vlines.forEach((m, k) => {
            if (m.x == null || !isFinite(m.x)) return;
            const px = u.valToPos(m.x, "x", true);
            if (px < left - 1 || px > left + width + 1) return;
            ctx.strokeStyle = ctx.fillStyle = m.color;
            ctx.setLineDash(m.dash ? [4 * dpr, 3 * dpr] : []);
            ctx.beginPath();
            ctx.moveTo(px, top);
            ctx.lineTo(px, top + height);
            ctx.stroke();
            ctx.fillText(m.label, px + 3 * dpr, top + (12 + 12 * (k % 4)) * dpr);
          });
          hlines.forEach((m) => {
            if (m.y == null || !isFinite(m.y)) return;
            const py = u.valToPos(m.y, m.scale || "y", true);
            if (py < top - 1 || py > top + height + 1) return;
            ctx.strokeStyle = ctx.fillStyle = m.color;
            ctx.setLineDash(m.dash ? [4 * dpr, 3 * dpr] : []);
            ctx.beginPath();
            ctx.moveTo(left, py);
            ctx.lineTo(left + width, py);
            ctx.stroke();
            ctx.textAlign = "right";
            ctx.fillText(m.label, left + width - 4 * dpr, py - 3 * dpr);
            ctx.textAlign = "left";
          });
          ctx.restore();
        },
      },
    };
  }

  // A y range from zero that also holds the given bounds (SLO lines stay on the chart), at
  // least up to `floor` (an all-zero series gets a readable axis).
  const upTo = (bounds, floor) => (u, min, max) => [0, Math.max(max, ...bounds.filter((b) => b != null && isFinite(b)).map((b) => b * 1.08), floor == null ? 1 : floor) * 1.02];
  // Fractions (KV cache usage, error rate) are drawn as percentages: axis labels keep 3 decimals.
  const isFraction = (name) => /usage|perc|ratio/.test(name);
  const mid = (n, step) => Array.from({ length: n }, (_, k) => (k + 0.5) * step);

  function plot(el, title, opts, data) {
    const o = Object.assign({ title, width: Math.max(300, Math.min(620, el.clientWidth || 520)), height: 270, plugins: [] }, opts);
    o.scales = Object.assign({ x: { time: false } }, opts.scales || {});
    new uPlot(o, data, el);
    el.dataset.drawn = "1";
    drawn += 1;
  }

  function empty(el, title, why) {
    el.innerHTML = `<div class="empty"><b></b><p></p></div>`;
    el.querySelector("b").textContent = title;
    el.querySelector("p").textContent = why;
    el.dataset.drawn = "empty";
  }

  const kinds = {
    cdf(el, i, metric) {
      const d = model.cases[i].distributions[metric];
      const title = `${d.label} distribution`;
      if (!d.cdf.x.length) return empty(el, title, "no samples");
      const top = d.cdf.x[d.cdf.x.length - 1];
      const v = [["p50", C[2]], ["p95", C[3]], ["p99", C[4]]].map(([k, color]) => ({ x: d.marks[k], label: `${k} ${fmt(d.marks[k])} ms`, color, dash: true }));
      const slo = d.slo.filter((s) => s.bound <= 3 * top);
      const off = d.slo.filter((s) => s.bound > 3 * top).map((s) => s.expr);
      slo.forEach((s) => v.push({ x: s.bound, label: `SLO ${s.expr}`, color: SLO }));
      const hi = Math.max(top, ...slo.map((s) => s.bound * 1.05));
      plot(el, title + (off.length ? ` (SLO ${off.join(", ")} off scale)` : ""), {
        scales: { x: { time: false, range: (u, min) => [Math.max(0, min - 0.05 * (hi - min)), hi] }, y: { range: [0, 1] } },
        axes: [axisX(`${d.label} (ms)`), axisY("fraction of requests")],
        series: [{ label: `${d.label} ms`, value: (u, x) => fmt(x) }, line("cumulative fraction", 0)],
        plugins: [marks(v, [])],
      }, [d.cdf.x, d.cdf.p]);
    },
    requests(el, i) {
      const r = model.cases[i].requests;
      const title = `Each request by start: TTFT and E2E (${r.start_ms.length} of ${r.of})`;
      if (!r.start_ms.length) return empty(el, title, "no completed requests");
      plot(el, title, {
        axes: [axisX("start (s into the measure window)"), axisY("latency (ms)")],
        series: [{ label: "start s", value: (u, x) => fmt(x, 3) }, dots("TTFT ms", 0), dots("E2E ms", 1)],
      }, [r.start_ms.map((v) => v / 1000), r.ttft_ms, r.e2e_ms]);
    },
    "in-flight"(el, i) {
      const t = model.cases[i].over_time;
      const title = "Requests in flight and failures over time";
      if (!t || !t.in_flight.length) return empty(el, title, "no measure window");
      const x = mid(t.in_flight.length, t.step_s);
      plot(el, title, {
        scales: { x: { time: false }, n: { range: upTo([]) }, f: { range: upTo([1]) } },
        axes: [axisX("time (s into the measure window)"), axisY("requests in flight", "n"), axisY("failed per slice", "f", 1)],
        series: [{ label: "t s", value: (u, v) => fmt(v, 2) }, line("in flight (mean)", 0, "n"), line("failed", 1, "f")],
      }, [x, t.in_flight, t.failed]);
    },
    throughput(el, i) {
      const t = model.cases[i].over_time;
      const title = "Throughput over time (completions by end time)";
      if (!t || !t.request_per_s.length) return empty(el, title, "no measure window");
      const x = mid(t.request_per_s.length, t.step_s);
      plot(el, title, {
        scales: { x: { time: false }, tok: { range: upTo([]) }, rps: { range: upTo([]) } },
        axes: [axisX("time (s into the measure window)"), axisY("output tokens/s", "tok"), axisY("requests/s", "rps", 1)],
        series: [{ label: "t s", value: (u, v) => fmt(v, 2) }, line("output tokens/s", 2, "tok"), line("requests/s", 0, "rps")],
      }, [x, t.output_tokens_per_s, t.request_per_s]);
    },
    gpu(el, i, g) {
      const d = model.cases[i].gpu[+g];
      const s = d.series;
      plot(el, `GPU ${d.index} (${d.name}): utilization and power`, {
        scales: { x: { time: false }, pct: { range: [0, 100] }, w: { range: upTo([]) } },
        axes: [axisX("time (s into the measure window)"), axisY("utilization (%)", "pct"), axisY("power (W)", "w", 1)],
        series: [{ label: "t s" }, line("utilization %", 0, "pct"), line("power W", 1, "w")],
      }, [s.t_s, s.values.util, s.values.power_w]);
    },
    "gpu-memory"(el, i, g) {
      const d = model.cases[i].gpu[+g];
      const s = d.series;
      plot(el, `GPU ${d.index}: memory and temperature`, {
        scales: { x: { time: false }, gib: { range: upTo([]) }, c: { range: upTo([]) } },
        axes: [axisX("time (s into the measure window)"), axisY("memory used (GiB)", "gib"), axisY("temperature (°C)", "c", 1)],
        series: [{ label: "t s" }, line("memory GiB", 2, "gib"), line("temperature °C", 3, "c")],
      }, [s.t_s, s.values.memory_used_gib, s.values.temperature_c]);
    },
    server(el, i, name) {
      const s = model.cases[i].server;
      const pct = isFraction(name);
      plot(el, `Engine: ${name}`, {
        scales: { x: { time: false }, y: { range: upTo([]) } },
        axes: [axisX("time (s into the measure window)"), axisY(pct ? "% (of the engine's KV cache)" : "count")],
        series: [{ label: "t s", value: (u, v) => fmt(v, 2) }, line(pct ? `${name} (%)` : name, 4)],
      }, [s.t_s, pct ? s.values[name].map((v) => v * 100) : s.values[name]]);
    },
    capacity(el, i) {
      const c = model.cases[i].capacity;
      const probes = (c.probes || []).slice().sort((a, b) => a.value - b.value);
      const est = c.estimate ? `, estimate ${fmt(c.estimate.value)} (${fmt(c.estimate.low)}–${fmt(c.estimate.high)})` : "";
      const title = `Capacity search over ${c.vary}: ${c.max_passing == null ? "nothing passed" : "max passing " + fmt(c.max_passing)}${est}`;
      if (!probes.length) return empty(el, title, "no probes");
      const passed = probes.map((p) => (p.verdict === "pass" ? p.goodput_per_s : null));
      const failed = probes.map((p) => (p.verdict === "pass" ? null : p.goodput_per_s));
      plot(el, title, {
        scales: { x: { time: false }, y: { range: upTo([]) }, ms: { range: upTo([]) } },
        axes: [axisX(`${c.vary} probed`), axisY("goodput (req/s)"), axisY("TTFT p95 (ms)", "ms", 1)],
        series: [{ label: c.vary }, dots("goodput, passed", 2), dots("goodput, failed", 1), line("TTFT p95 ms", 0, "ms")],
        plugins: [marks([{ x: c.max_passing, label: "proven", color: C[2] }]
          .concat(c.estimate ? [{ x: c.estimate.value, label: "estimate", color: C[3] }] : []), [])],
      }, [probes.map((p) => p.value), passed, failed, probes.map((p) => p.ttft_p95_ms)]);
    },
    parts(el, i) {
      const p = model.cases[i].parts;
      const s = { axis: p.kind, labels: p.labels, numeric: false, verdicts: p.labels.map(() => "") };
      const title = p.kind === "class" ? "Latency by traffic class"
        : p.kind === "step" ? "Latency by agent step (later steps carry the context)"
        : "Latency by turn (later turns carry the history)";
      plot(el, title, {
        scales: { x: { time: false, range: [-0.5, p.labels.length - 0.5] }, y: { range: upTo([]) } },
        axes: [Object.assign(sweepAxis(s), { splits: () => p.labels.map((l, k) => k) }), axisY("latency (ms)")],
        series: [{ label: p.kind, value: (u, v, si, k) => (k == null ? "-" : p.labels[k]) },
          Object.assign(dots("TTFT p50 ms", 0), { points: { show: true, size: 9 } }),
          Object.assign(dots("TTFT p95 ms", 1), { points: { show: true, size: 9 } }),
          Object.assign(dots("E2E p95 ms", 3), { points: { show: true, size: 9 } })],
      }, [p.labels.map((l, k) => k), p.ttft_p50, p.ttft_p95, p.e2e_p95]);
    },
    "sweep-latency"(el, i, metric) {
      const s = model.sweeps[i];
      const l = s.latency[metric];
      const name = metric.split("_")[0].toUpperCase();
      const top = Math.max(...l.p95.filter((v) => v != null), ...l.p50.filter((v) => v != null));
      const near = l.slo.filter((b) => b.bound <= 3 * top);
      const off = l.slo.filter((b) => b.bound > 3 * top).map((b) => b.expr);
      const h = near.map((b) => ({ y: b.bound, label: `SLO ${b.expr}`, color: SLO }));
      plot(el, `${name} p50 and p95 by ${s.axis}` + (off.length ? ` (SLO ${off.join(", ")} off scale)` : ""), {
        scales: { x: { time: false }, y: { range: upTo(h.map((b) => b.y)) } },
        axes: [sweepAxis(s), axisY(`${name} (ms)`)],
        series: [sweepSeries(s), line(`${name} p50 ms`, 0), line(`${name} p95 ms`, 1)],
        plugins: [marks(knee(s), h)],
      }, [s.x, l.p50, l.p95]);
    },
    "sweep-throughput"(el, i) {
      const s = model.sweeps[i];
      const h = s.throughput_slo.map((b) => ({ y: b.bound, label: `SLO ${b.expr}`, color: SLO, scale: "tok" }));
      plot(el, `Throughput by ${s.axis}`, {
        scales: { x: { time: false }, tok: { range: upTo(h.map((b) => b.y)) }, rps: { range: upTo([]) } },
        axes: [sweepAxis(s), axisY("output tokens/s", "tok"), axisY("requests/s", "rps", 1)],
        series: [sweepSeries(s), line("output tokens/s", 2, "tok"), line("requests/s", 0, "rps")],
        plugins: [marks(knee(s), h)],
      }, [s.x, s.output_tokens_per_s, s.request_per_s]);
    },
    frontier(el, i) {
      const s = model.sweeps[i];
      const f = s.frontier;
      const idx = f.tokens_per_s_per_user.map((u, k) => k).filter((k) => f.tokens_per_s_per_user[k] != null);
      idx.sort((a, b) => f.tokens_per_s_per_user[a] - f.tokens_per_s_per_user[b]);
      const title = "Throughput against interactivity (the frontier)";
      if (idx.length < 2) return empty(el, title, "needs TPOT at two points or more");
      plot(el, title, {
        scales: { x: { time: false }, y: { range: upTo([]) } },
        axes: [axisX("tokens/s per user (1000 / TPOT p50)"), axisY("output tokens/s (all users)")],
        series: [
          { label: "tokens/s/user", value: (u, v) => fmt(v) },
          dots(`${s.axis} points`, 0),
          Object.assign(line("Pareto frontier", 1), { spanGaps: true }),
          { label: s.axis, value: (u, v, si, k) => (k == null ? "-" : s.labels[idx[k]]), show: true, stroke: "transparent", paths: () => null, points: { show: false } },
        ],
      }, [idx.map((k) => f.tokens_per_s_per_user[k]), idx.map((k) => f.output_tokens_per_s[k]), idx.map((k) => (f.pareto[k] ? f.output_tokens_per_s[k] : null)), idx.map(() => null)]);
    },
    trend(el, i) {
      const t = model.trends[i];
      const pct = t.unit === "fraction";
      // Each change point: a mark between the last run before the shift and the first after it.
      const shifts = (t.change_points || []).map((c) => ({
        x: (t.t[c.index - 1] + t.t[c.index]) / 2,
        label: `${c.change >= 0 ? "+" : ""}${fmt(c.change * 100, 1)} %`,
        color: "#b00",
        dash: true,
      }));
      const first = (t.change_points || [])[0];
      const title = first ? `${t.case}: ${t.metric} — shifted at run ${first.index + 1}${t.change_points.length > 1 ? ` (+${t.change_points.length - 1} more)` : ""}` : `${t.case}: ${t.metric}`;
      plot(el, title, {
        width: 380,
        height: 220,
        scales: { x: { time: true }, y: { range: upTo([]) } },
        axes: [{ stroke: "#333", grid: { stroke: "#eee" } }, axisY(`${t.metric} (${pct ? "%" : t.unit})`)],
        series: [{ label: "run" }, Object.assign(line(t.metric, 0), { points: { show: true, size: 6 } }),
          { label: "verdict", value: (u, v, si, k) => (k == null ? "-" : `${t.verdicts[k] || "-"} @ ${t.revision[k] || "?"}`), paths: () => null, points: { show: false } }],
        plugins: [marks(shifts, [])],
      }, [t.t, pct ? t.values.map((v) => (v == null ? null : v * 100)) : t.values, t.values.map(() => null)]);
    },
  };

  function sweepAxis(s) {
    const a = axisX(s.axis);
    if (!s.numeric) a.values = (u, splits) => splits.map((v) => (Number.isInteger(v) && s.labels[v] != null ? s.labels[v] : ""));
    return a;
  }
  function sweepSeries(s) {
    return { label: s.axis, value: (u, v, si, k) => (k == null ? "-" : `${s.labels[k]} (${s.verdicts[k]})`) };
  }
  function knee(s) {
    return s.knee == null ? [] : [{ x: s.x[s.knee], label: `knee: ${s.labels[s.knee]}`, color: "#555", dash: true }];
  }

  document.querySelectorAll(".chart").forEach((el) => {
    const kind = el.dataset.kind;
    try {
      if (!kinds[kind]) throw new Error(`unknown chart ${kind}`);
      kinds[kind](el, +el.dataset.index, el.dataset.metric);
    } catch (e) {
      fail(`${kind} ${el.dataset.index} ${el.dataset.metric}: ${e && e.stack ? e.stack : e}`);
    }
  });
  document.body.dataset.charts = String(drawn);
  document.body.dataset.done = "1";
})();
