// A plotly chart, or a block of the app's own HTML, kept in place.
//
// A chart: the first render draws it, every later render (a new figure for the same key)
// calls Plotly.react on the same div, so plotly updates what changed instead of building
// the chart anew (Streamlit's st.plotly_chart mounts a new chart for every new figure).
// plotly.js is loaded once per page, from the plotly package the server already has
// (data.src: gzipped once by the server, inflated here). A click on a point with customdata sends it back as the trigger value "click".
//
// HTML (data.html): the server builds it from escaped text only (kieval_core.figures.diff); it
// replaces the block's content.
//
// Either is drawn when it comes within NEAR of the visible part of the page: moving to the
// next document redraws what the user sees first, not what is a screen below. Until then
// its space is kept and what it still shows (the previous document's) is hidden, so stale
// content is never seen. Once drawn, data-drawn names what it shows (data.revision).
const NEAR = "300px";

// The page's look as a plotly template, under what the figure sets itself: the app's font,
// text and background colours (light or dark), and the sizes Streamlit's own chart theme
// uses (12 px legend and hover text, 8 px between the plot and its axes).
const template = (chart) => {
  const text = getComputedStyle(chart);
  const app = chart.closest('[data-testid="stApp"]');
  const background = app ? getComputedStyle(app).backgroundColor : "white";
  const font = { family: text.fontFamily, color: text.color };
  return {
    layout: {
      font: { ...font, size: 12 },
      paper_bgcolor: background,
      plot_bgcolor: background,
      legend: { font: { size: 12 }, bordercolor: "transparent", borderwidth: 0 },
      hoverlabel: { bgcolor: background, font: { ...font, size: 12 } },
      margin: { pad: 8 },
      xaxis: { automargin: true },
      yaxis: { automargin: true },
    },
  };
};

// Run draw() now if the block is near the visible part, else once it comes near.
const whenNear = (block, draw) => {
  block.kievalPending = draw;
  if (block.kievalNear) {
    block.kievalPending = null;
    draw();
    return;
  }
  block.style.visibility = "hidden";
  if (!block.kievalObserver) {
    block.kievalObserver = new IntersectionObserver((entries) => {
      block.kievalNear = entries[entries.length - 1].isIntersecting;
      if (block.kievalNear && block.kievalPending) {
        const pending = block.kievalPending;
        block.kievalPending = null;
        pending();
      }
    }, { rootMargin: NEAR, scrollMargin: NEAR });
    block.kievalObserver.observe(block);
  }
};

const drawn = (block, revision) => {
  block.style.visibility = "";
  block.dataset.drawn = revision;
};

const chartDraw = (chart, data) => {
  const figure = JSON.parse(data.figure);
  const layout = { ...(figure.layout || {}), template: template(chart) };
  for (const image of layout.images || []) { // each source sent once (live_chart.py)
    if (typeof image.source === "number") image.source = data.images[image.source];
  }
  chart.style.height = `${layout.height || 450}px`; // the space is kept while a draw waits
  return () => {
    window.Plotly.react(chart, figure.data, layout, data.config).then(() => drawn(chart, data.revision));
    if (!chart.kievalListening) {
      chart.kievalListening = true;
      chart.on("plotly_click", (event) => {
        const point = event.points && event.points[0];
        if (point && point.customdata !== undefined && point.customdata !== null) {
          chart.kievalSend("click", point.customdata);
        }
      });
    }
  };
};

// The gzip file is inflated here, not by the server's gzip layer for every visitor.
const plotlyLoaded = (src) => {
  if (window.Plotly) return Promise.resolve();
  const failure = () => new Error(`plotly.js did not load from ${src}`);
  window.kievalPlotly = window.kievalPlotly || fetch(src)
    .then((response) => {
      if (!response.ok) throw failure();
      return new Response(response.body.pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
    })
    .then((code) => new Promise((loaded, failed) => {
      const script = document.createElement("script");
      script.src = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
      script.onload = () => { URL.revokeObjectURL(script.src); loaded(); };
      script.onerror = () => failed(failure());
      document.head.appendChild(script);
    }));
  return window.kievalPlotly;
};

export default function ({ data, parentElement, setTriggerValue }) {
  let block = parentElement.querySelector("div.kieval-live");
  if (block === null) {
    block = document.createElement("div");
    block.className = "kieval-live";
    block.style.width = "100%";
    parentElement.appendChild(block);
  }
  if (data.html !== undefined) {
    whenNear(block, () => {
      block.innerHTML = data.html;
      drawn(block, data.revision);
    });
  } else {
    block.kievalSend = setTriggerValue; // the latest render's, read by the one click handler
    const draw = chartDraw(block, data);
    if (window.Plotly) {
      whenNear(block, draw);
    } else {
      plotlyLoaded(data.src).then(() => whenNear(block, draw), (error) => {
        block.textContent = `The chart cannot be drawn: ${error.message}.`;
      });
    }
  }
  return () => { // unmounted: a later mount starts from a new div
    if (block.kievalObserver) block.kievalObserver.disconnect();
    if (window.Plotly && data.html === undefined) window.Plotly.purge(block);
    block.remove();
  };
}
