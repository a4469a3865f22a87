// Chapter 3, vanishing gradients: how much gradient reaches each input position of the RNN and
// the LSTM encoders (log scale), and how open the LSTM's gates are at each token.
import { GATE_SCALE, MODEL_COLOURS, baseLayout, draw, plotText, showEmpty, showToken, tokenAxis } from "./plots.js";

const GATE_NAMES = ["input", "forget", "output"];

export function drawGradients(div, response) {
  const curves = (response && response.curves) || [];
  const data = curves
    .filter((c) => c.distance && c.distance.length)
    .map((c) => {
      // A log axis cannot show 0: such points (underflow) are left as gaps.
      const norm = c.norm.map((v) => (v > 0 ? v : null));
      return {
        type: "scatter",
        mode: c.distance.length > 40 ? "lines" : "lines+markers",
        name: c.model === "rnn" ? "RNN" : c.model === "lstm" ? "LSTM" : plotText(c.model),
        x: c.distance,
        y: norm,
        line: { color: MODEL_COLOURS[c.model] || "#444", width: 2.5, dash: c.model === "rnn" ? "solid" : "solid" },
        marker: { size: 5, symbol: c.model === "rnn" ? "circle" : "diamond" },
        hovertemplate: `<b>${c.model === "rnn" ? "RNN" : "LSTM"}</b><br>%{x} steps before the end<br>norm %{y:.3g}<extra></extra>`,
      };
    });
  if (!data.length) {
    showEmpty(div, "The RNN and LSTM models are not available yet, so there is nothing to measure.");
    return;
  }
  const layout = baseLayout({
    margin: { l: 64, r: 12, t: 10, b: 48 },
    xaxis: { title: { text: "tokens before the end of the input" }, zeroline: false, gridcolor: "#eceef3" },
    yaxis: { title: { text: "gradient norm" }, type: "log", exponentformat: "power", gridcolor: "#eceef3", zeroline: false },
    legend: { x: 1, xanchor: "right", y: 1, bgcolor: "rgba(255,255,255,0.85)" },
  });
  draw(div, data, layout, "gradient-norm-rnn-vs-lstm");
}

/**
 * The gate activations to draw. `gates` (API: /api/gradients) holds, per gate, a token x unit
 * matrix for the units that vary most, and `mean`: each gate's average over all units per token.
 * view "mean": rows are the three gates; view "input" | "forget" | "output": rows are units.
 */
export function gateMatrix(response, view = "mean") {
  const g = response && response.gates;
  if (!g) return null;
  const tokens = response.tokens || [];
  if (view === "mean") {
    const mean = g.mean || {};
    const names = GATE_NAMES.filter((n) => Array.isArray(mean[n]));
    if (!names.length) return null;
    return { rows: names.map((n) => `${n} gate`), values: names.map((n) => mean[n]), tokens, rowTitle: "" };
  }
  const perToken = g[view];
  if (!Array.isArray(perToken) || !perToken.length) return null;
  const units = g.units || perToken[0].map((_, i) => i);
  // token x unit -> unit x token, so tokens run along the x axis in both views
  const values = units.map((_, u) => perToken.map((row) => row[u]));
  return { rows: units.map((u) => `unit ${u}`), values, tokens, rowTitle: `${view} gate, most active units` };
}

export function drawGates(div, response, view = "mean") {
  const m = gateMatrix(response, view);
  if (!m || !m.values.length || !m.tokens.length) {
    showEmpty(div, "The LSTM is not available yet, so its gates cannot be shown.");
    return;
  }
  const tokens = m.tokens.slice(0, m.values[0].length);
  const labels = tokens.map((t) => plotText(showToken(t)));
  const rows = m.rows.map(plotText);
  const trace = {
    type: "heatmap",
    z: m.values,
    x: tokens.map((_, i) => i),
    y: rows.map((_, i) => i),
    customdata: rows.map((name) => labels.map((tok, i) => [name, tok, i + 1])),
    hovertemplate: "<b>%{customdata[0]}</b><br>token %{customdata[2]}: <b>%{customdata[1]}</b><br>%{z:.3f}<extra></extra>",
    colorscale: GATE_SCALE,
    zmin: 0,
    zmax: 1,
    xgap: tokens.length > 60 ? 0 : 1,
    ygap: rows.length > 8 ? 0 : 2,
    showscale: false,
    meta: { colorbarTitle: "activation" },
  };
  const layout = baseLayout({
    margin: { l: 84, r: 12, t: 10, b: 70 },
    xaxis: tokenAxis(tokens, {
      tickangle: tokens.length > 8 ? -60 : 0,
      automargin: false, // rotated labels would otherwise cost a second layout pass per redraw
    }, 20),
    yaxis: {
      ...tokenAxis(m.rows, { autorange: "reversed" }),
      ...(rows.length > 8 ? { showticklabels: false, title: { text: plotText(m.rowTitle) } } : {}),
    },
  });
  div.dataset.view = view;
  draw(div, [trace], layout, `lstm-gates-${view}`);
}
