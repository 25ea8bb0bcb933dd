"""App side of the KIEval Workbench dashboard.

The builders (:mod:`.overview`, :mod:`.documents`, :mod:`.error_analysis`,
:mod:`.automation`, :mod:`.compare`, :mod:`.diff`, :mod:`.guide`) turn the core's results
into tables and plotly figures and never import Streamlit; :mod:`.store` and
:mod:`.compute` share the evaluations between sessions without Streamlit either. The
Streamlit boundary is :mod:`.session`, :mod:`.uploads`, :mod:`.sidebar`, :mod:`.columns`
and :mod:`.live_chart`; :mod:`.launch` starts the server (``kieval dashboard``).
"""
