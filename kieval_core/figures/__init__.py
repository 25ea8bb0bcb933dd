"""Figures: the plotly figures and HTML tables of the dashboard, the notebook and MLflow,
built from core tables (none imports Streamlit)."""
