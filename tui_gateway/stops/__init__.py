"""Stops: every stop the gateway takes, booked in one office and delivered where it reaches.

- :mod:`~tui_gateway.stops.booking`: the booking office: where every stop the gateway takes is
  booked.
- :mod:`~tui_gateway.stops.routes`: the routes of the booking office: what a stop reaches, one
  small class per kind.
- :mod:`~tui_gateway.stops.key_stops`: the key rule: a stop key stops what runs in its session now,
  or the prompt entered before it.
- :mod:`~tui_gateway.stops.remote`: turns that run on another gateway host: the route a stop takes
  to them, and the stops that other hosts send to this one.
- :mod:`~tui_gateway.stops.shutdown`: ``gateway.shutdown``: a system stop of everything, a bounded
  wait, then the store is closed.
- :mod:`~tui_gateway.stops.process_exit`: the end of a desk process: no thread runs while the
  interpreter finalizes.

Nothing is imported here: importing one module of the package loads what that module needs.
"""
