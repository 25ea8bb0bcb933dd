"""App-side helpers of the KIEval Workbench dashboard.

Every module here except :mod:`kieval_app.workspace` is pure: it turns the core's result
objects (:class:`kieval_core.EvaluationResult`, :class:`kieval_core.ModelResult`) into
pandas DataFrames and plotly figures, and never imports streamlit, so unit tests call it
directly. :mod:`kieval_app.workspace` is the Streamlit boundary: uploads, options,
cached loading and evaluation, and the few ``st.session_state`` keys the pages share.
"""
