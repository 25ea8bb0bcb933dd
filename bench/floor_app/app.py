"""Streamlit's own floor: a minimal three-page app for ``bench/bench_latency.py``.

It does what a dashboard page does at its lightest (a table, a chart, two widgets) so
that the benchmark can tell the framework's cost on this machine from the app's.

- Table: a dataframe of 100 rows;
- Chart: a plotly scatter of 2,000 points;
- Controls: a slider and a button that rerun and print the value, and a button that
  sleeps ``FLOOR_SLEEP_MS`` milliseconds (environment, default 500) before it prints:
  the benchmark's self-check of its idle detection.

Run with ``streamlit run bench/floor_app/app.py``.
"""

import os
import time

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

SLEEP_MS = int(os.environ.get("FLOOR_SLEEP_MS", "500"))

st.set_page_config(page_title="Floor", layout="wide")


def table() -> None:
    st.title("Table")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "doc_id": [f"doc_{i:04d}" for i in range(100)],
            "field": rng.choice(["menu.nm", "menu.price", "total.total_price"], 100),
            "value": [f"{v:,}" for v in rng.integers(1_000, 99_000, 100)],
            "score": rng.random(100).round(4),
        }
    )
    with st.container(key="floor_table"):  # keyed containers carry .st-key-<key>
        st.dataframe(frame, hide_index=True)


def chart() -> None:
    st.title("Chart")
    rng = np.random.default_rng(1)
    x = rng.random(2_000)
    figure = go.Figure(go.Scatter(x=x, y=x + rng.normal(0, 0.1, 2_000), mode="markers"))
    figure.update_layout(height=450, margin={"l": 40, "r": 10, "t": 10, "b": 40})
    with st.container(key="floor_chart"):
        st.plotly_chart(figure, config={"displayModeBar": False})


def controls() -> None:
    st.title("Controls")
    value = st.slider("Value", min_value=0.0, max_value=1.0, step=0.0001, format="%.4f",
                      key="floor_slider")
    if st.button("Rerun", key="floor_button"):
        st.session_state["floor_clicks"] = st.session_state.get("floor_clicks", 0) + 1
    if st.button(f"Sleep {SLEEP_MS} ms", key="floor_sleep"):
        time.sleep(SLEEP_MS / 1000)
    st.write(f"Value: {value:.4f}; clicks: {st.session_state.get('floor_clicks', 0)}")


st.navigation(
    [
        st.Page(table, title="Table", url_path="table", default=True),
        st.Page(chart, title="Chart", url_path="chart"),
        st.Page(controls, title="Controls", url_path="controls"),
    ]
).run()
