// FigureGrid: plotly figures in a responsive grid; clicks go back to Python.
// plotly.js comes from the kernel (the plotly package) once per page, or from an inline
// <script> in an offline report; never from a CDN.

let plotlyLoading = null;

function ensurePlotly(model) {
  if (globalThis.Plotly) return Promise.resolve(globalThis.Plotly);
  if (plotlyLoading) return plotlyLoading;
  plotlyLoading = new Promise((resolve) => {
    model.on("msg:custom", (msg) => {
      if (msg && msg.type === "plotly" && !globalThis.Plotly) {
        new Function(msg.source).call(globalThis);
        resolve(globalThis.Plotly);
      } else if (msg && msg.type === "plotly") {
        resolve(globalThis.Plotly);
      }
    });
    model.send({ type: "need_plotly" });
  });
  return plotlyLoading;
}

function drawFigures(Plotly, el, figures, columns, onClick) {
  el.classList.add("wb-figures");
  el.style.gridTemplateColumns = `repeat(${Math.max(1, columns)}, minmax(0, 1fr))`;
  const keep = new Map();
  for (const child of Array.from(el.children)) keep.set(child.dataset.name, child);
  const seen = new Set();
  figures.forEach((fig, i) => {
    let div = keep.get(fig.name);
    if (!div) {
      div = document.createElement("div");
      div.className = "wb-figure";
      div.dataset.name = fig.name;
    }
    el.appendChild(div); // keeps the order of `figures`
    seen.add(fig.name);
    const layout = Object.assign({}, fig.layout, { autosize: true });
    delete layout.width;
    Plotly.react(div, fig.data || [], layout, { responsive: true, displaylogo: false });
    if (!div.dataset.clicks) {
      div.dataset.clicks = "1";
      div.on("plotly_click", (ev) => {
        const p = ev && ev.points && ev.points[0];
        if (!p) return;
        onClick(div.dataset.name, {
          x: p.x, y: p.y, curve: p.curveNumber, trace: p.data && p.data.name,
          customdata: p.customdata === undefined ? null : p.customdata,
        });
      });
    }
  });
  for (const [name, div] of keep) if (!seen.has(name)) { Plotly.purge(div); div.remove(); }
}

function watchSize(Plotly, el) {
  if (typeof ResizeObserver === "undefined") return () => {};
  let frame = 0;
  const ro = new ResizeObserver(() => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => {
      for (const div of el.querySelectorAll(".wb-figure")) {
        if (div.offsetWidth > 0) Plotly.Plots.resize(div);
      }
    });
  });
  ro.observe(el);
  return () => ro.disconnect();
}

function renderFigures({ model, el }) {
  let stop = () => {};
  ensurePlotly(model).then((Plotly) => {
    const draw = () => drawFigures(Plotly, el, model.get("figures"), model.get("columns"),
      (name, point) => model.send({ type: "click", name, point }));
    draw();
    model.on("change:figures", draw);
    model.on("change:columns", draw);
    stop = watchSize(Plotly, el);
  });
  return () => stop();
}

export default { render: renderFigures };
