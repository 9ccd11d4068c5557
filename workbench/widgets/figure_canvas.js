// The front end of FigureCanvas: draws a plotly figure sent as JSON with the page's plotly.js.
//
// plotly.js is never sent with the figure. JupyterLab's own plotly renderer (jupyterlab-plotly) sets
// window.Plotly once it has loaded; when nothing has loaded it yet, its renderer is asked to draw
// an empty figure, which loads it. Only where that renderer is missing is plotly.js asked of the
// kernel, once per page.
const PLOTLY_MIME = "application/vnd.plotly.v1+json";

function viaJupyterLab() {
  const container = window._JUPYTERLAB && window._JUPYTERLAB["jupyterlab-plotly"];
  if (!container) return Promise.reject(new Error("no jupyterlab-plotly"));
  return container.get("./mimeExtension").then(async (factory) => {
    const module = factory();
    const extensions = [].concat(module.default || module);
    const extension = extensions.find((e) => e.rendererFactory && e.rendererFactory.mimeTypes.includes(PLOTLY_MIME));
    const renderer = extension.rendererFactory.createRenderer({ mimeType: PLOTLY_MIME });
    const hidden = document.createElement("div");
    hidden.style.cssText = "position:absolute;left:-10000px;width:10px;height:10px;";
    document.body.appendChild(hidden);
    hidden.appendChild(renderer.node);
    try {
      await renderer.renderModel({ data: { [PLOTLY_MIME]: { data: [], layout: {} } }, metadata: {}, trusted: true, setData() {} });
    } finally {
      hidden.remove();
    }
    if (!window.Plotly) throw new Error("jupyterlab-plotly did not load plotly.js");
    return window.Plotly;
  });
}

function viaKernel(model) {
  return new Promise((resolve, reject) => {
    const listener = (message) => {
      if (!message || message.kind !== "plotly.js") return;
      model.off("msg:custom", listener);
      const script = document.createElement("script");
      script.src = URL.createObjectURL(new Blob([message.source], { type: "text/javascript" }));
      script.onload = () => (window.Plotly ? resolve(window.Plotly) : reject(new Error("plotly.js did not load")));
      script.onerror = () => reject(new Error("plotly.js did not load"));
      document.head.appendChild(script);
    };
    model.on("msg:custom", listener);
    model.send({ kind: "need plotly.js" });
  });
}

function plotly(model) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__ipuWorkbenchPlotly) {
    window.__ipuWorkbenchPlotly = viaJupyterLab().catch(() => viaKernel(model));
    window.__ipuWorkbenchPlotly.catch(() => delete window.__ipuWorkbenchPlotly);
  }
  return window.__ipuWorkbenchPlotly;
}

function render({ model, el }) {
  el.classList.add("ipu-wb-figure-canvas");
  const plot = document.createElement("div");
  const status = document.createElement("div");
  status.textContent = "drawing\u2026";
  status.style.cssText = "padding:8px;color:#666;font:13px sans-serif;";
  el.append(status, plot);
  let drawn = null;
  // A figure drawn in a hidden tab gets plotly's default width; it takes its container's width
  // whenever the container's width changes (the tab shown, the panel resized).
  // The kernel hears the width the page gives the figure (``room``), so that a view can lay its picture
  // out to fit a narrow output instead of sticking out of it.
  // A message, not a synced value: saving one would also send the page's patched copy of the figure.
  let told = null;
  let room = 0;
  const resizer = new ResizeObserver(() => {
    if (drawn && window.Plotly && el.clientWidth > 0) drawn.then(() => window.Plotly.Plots.resize(plot));
    clearTimeout(told);
    told = setTimeout(() => {
      const width = Math.floor(el.clientWidth);
      if (width > 0 && Math.abs(width - room) > 8) {
        room = width;
        model.send({ kind: "room", width });
      }
    }, 150);
  });
  resizer.observe(el);
  plotly(model).then((Plotly) => {
    const draw = () => {
      // Plotly keeps and edits the objects it is given (a resize deletes the layout's height): it gets
      // copies, so that the model's figure, which the next patch starts from, keeps its own.
      const figure = model.get("figure");
      const data = (figure.data || []).map((trace) => ({ ...trace }));
      drawn = Plotly.react(plot, data, { ...(figure.layout || {}) }, { responsive: true, displaylogo: false });
      return drawn;
    };
    draw().then(() => {
      status.remove();
      plot.on("plotly_click", (event) => {
        const keys = event.points.map((point) => point.customdata).filter((key) => key !== undefined);
        if (keys.length) model.send({ kind: "click", keys });
      });
    });
    model.on("change:figure", draw);
  }, (error) => {
    status.textContent = `cannot draw this figure: ${error.message}`;
  });
  return () => {
    clearTimeout(told);
    resizer.disconnect();
    if (window.Plotly && drawn) window.Plotly.purge(plot);
  };
}

// A patch: the changed traces and layout keys of the next figure, applied to the page's copy of the model
// as it arrives, whether or not a view of it is drawn yet (a tab not shown, plotly.js still loading): a view
// drawn later shows the figure as patched.
function initialize({ model }) {
  model.on("msg:custom", (message) => {
    if (!message || message.kind !== "patch") return;
    const figure = model.get("figure");
    const data = (figure.data || []).slice();
    for (const [index, trace] of Object.entries(message.traces)) data[Number(index)] = trace;
    const layout = { ...(figure.layout || {}) };
    for (const [key, value] of Object.entries(message.layout)) {
      if (value === null) delete layout[key];
      else layout[key] = value;
    }
    model.set("figure", { data, layout });  // this page's copy only: the kernel holds the same already
  });
}

export default { initialize, render };
