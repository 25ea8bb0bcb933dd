"""KIEval Workbench dashboard: the frame.

Navigation over the pages in ``app_pages/``, the sidebar every page shares (model,
options), the reading of uploads and the scoring of every model (shared by content in
the server's store, so a page switch recomputes nothing); pages only render.

The pages are not in ``pages/`` on purpose: Streamlit runs a ``pages/`` directory as a
legacy multipage app until ``st.navigation`` has run once in the server process, so the
first visitor of a deep link such as ``/documents?doc=...`` would get the page without
this frame.

Run with ``streamlit run app.py`` (or ``kieval dashboard``).
"""

import streamlit as st

from kieval_app import session, sidebar, uploads
from kieval_app.paths import ICON
from kieval_core.figures.text import md

# a local icon: a :material/...: icon would make every page load fetch it from a font host
st.set_page_config(page_title="KIEval Workbench", page_icon=str(ICON), layout="wide")

page = st.navigation(
    [
        st.Page("app_pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
        st.Page("app_pages/documents.py", title="Documents", icon=":material/description:"),
        st.Page("app_pages/errors.py", title="Errors", icon=":material/rule:"),
        st.Page("app_pages/automation.py", title="Automation", icon=":material/tune:"),
        st.Page("app_pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page("app_pages/suspects.py", title="Suspect labels", icon=":material/fact_check:"),
        st.Page("app_pages/guide.py", title="Metrics guide", icon=":material/menu_book:"),
    ]
)

session.init_state()
sidebar.init_options()
model_slot = st.sidebar.container()
st.sidebar.markdown("**Options**")
options = sidebar.render_options()

bar, cancel = st.empty(), st.empty()
uploads.process_pending(options, lambda share, text: bar.progress(share, text=md(text)), cancel)
bar.empty()
ws = session.prepare(options)

with model_slot:
    sidebar.adopt_model_from_url(ws)
    sidebar.render_model_picker(ws)
    sidebar.render_data_summary(ws)
    background = st.empty()

try:
    page.run()
    session.finish_background(ws, background)
finally:
    # Streamlit keeps the last run's script module (as __main__) until the next run of any
    # session: a workspace left in its globals would outlive a closed tab.
    del ws
