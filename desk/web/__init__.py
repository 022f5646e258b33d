"""``desk web``: the desk in a browser (:mod:`desk.web.command`, :mod:`desk.web.server`)."""
