"""Sessions: the live ones in memory, the saved ones in the store, and what could not be saved.

- :mod:`~tui_gateway.sessions.state`: the gateway's in-memory state: live sessions and their turns.
- :mod:`~tui_gateway.sessions.session_table`: the gateway's live sessions: lookup, which one to
  evict, and closing for good.
- :mod:`~tui_gateway.sessions.saved_sessions`: ``session.list``, ``session.resume``, rename and
  delete: the gateway's saved sessions.
- :mod:`~tui_gateway.sessions.project`: a new session's system message, the project instructions
  files a session carries, and the workspace's files for ``@`` mentions.
- :mod:`~tui_gateway.sessions.persistence`: the gateway's writes to the session store: what is
  saved when, and never lost on the way.
- :mod:`~tui_gateway.sessions.store_writer`: the gateway's one writer thread: every store write in
  order, delayed while the database is unavailable, never dropped; drafts of streaming replies
  written often, off the turn's loop.
- :mod:`~tui_gateway.sessions.unsaved`: what the gateway could not save, written to a file of its
  own so that nothing is lost.
- :mod:`~tui_gateway.sessions.checkpoints`: checkpoints and ``/undo``: each turn's changes to the
  workspace, recorded and undone.

Nothing is imported here: importing one module of the package loads what that module needs.
"""
