"""Live ipywidgets + plotly views of the broker (hash ranges, rings, cursors, timelines).

The views arrive with the widgets issue; this package reserves the namespace.
"""
