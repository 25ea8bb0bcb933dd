"""KIEval Workbench dashboard: the frame.

Navigation over the pages in ``app_pages/``, the sidebar every page shares (model,
options), and the loading of the data: uploads are read and every model is evaluated
here, with a progress bar and ``st.cache_data`` keyed by file content; pages only render.

The pages are not in ``pages/`` on purpose: Streamlit runs a ``pages/`` directory as a
legacy multipage app until ``st.navigation`` has run once in the server process, so the
first visitor of a deep link such as ``/documents?doc=...`` would get the page without
this frame.

Run with ``streamlit run app.py``.
"""

import streamlit as st

from kieval_app import workspace

st.set_page_config(
    page_title="KIEval Workbench", page_icon=":material/receipt_long:", layout="wide"
)

page = st.navigation(
    [
        st.Page(
            "app_pages/overview.py", title="Overview", icon=":material/dashboard:", default=True
        ),
        st.Page("app_pages/documents.py", title="Documents", icon=":material/description:"),
        st.Page("app_pages/errors.py", title="Errors", icon=":material/rule:"),
        st.Page("app_pages/automation.py", title="Automation", icon=":material/tune:"),
        st.Page("app_pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page("app_pages/guide.py", title="Metrics guide", icon=":material/menu_book:"),
    ]
)

workspace.init_state()
model_slot = st.sidebar.container()
st.sidebar.markdown("**Options**")
options = workspace.render_options()

ws = workspace.prepare(options)
st.session_state[workspace.WORKSPACE] = ws

with model_slot:
    workspace.adopt_model_from_url(ws)
    workspace.render_model_picker(ws)
    workspace.render_data_summary(ws)

page.run()
