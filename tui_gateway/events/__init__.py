"""Events: numbered and handed to every subscriber, and kept in a shared store for another host.

- :mod:`~tui_gateway.events.event_hub`: numbering a gateway's events and handing them to every
  subscriber, in order.
- :mod:`~tui_gateway.events.shared_events`: event numbers from a shared store, and the events kept
  there for a resume on another host.

Nothing is imported here: importing one module of the package loads what that module needs.
"""
