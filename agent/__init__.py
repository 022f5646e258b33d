"""The agent runtime of desk: provider client, turn loop, stops.

Nothing in this package imports Textual; it is driven by the gateway (``tui_gateway``).
"""
