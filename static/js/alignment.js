// Chapter 5, deriving attention: the alignment grid of a recurrent model with attention,
// output words (rows) by source words (columns).
import { attentionTrace, baseLayout, draw, showEmpty, tokenAxis } from "./plots.js";

export function drawAlignment(div, model, response) {
  const map = response && response.maps.find((m) => m.kind === "cross");
  if (!map || !map.rows.length || !map.cols.length) {
    showEmpty(div, `${model} produced no attention for this sentence.`);
    return;
  }
  const trace = attentionTrace(map);
  const layout = baseLayout({
    margin: { l: 60, r: 12, t: 8, b: 60 },
    xaxis: tokenAxis(map.cols, { title: { text: "source (French)", standoff: 6 }, tickangle: map.cols.length > 8 ? -45 : 0 }),
    yaxis: tokenAxis(map.rows, { title: { text: "output (English)", standoff: 6 }, autorange: "reversed" }),
  });
  draw(div, [trace], layout, `attention-${model}`);
}
