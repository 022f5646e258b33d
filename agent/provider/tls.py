"""One TLS context for the whole process, shared by every HTTP client desk makes.

An ``httpx`` client made without one builds its own context at construction, even for a
plain-HTTP server: it loads the certificate bundle, about 29 ms of CPU each time (measured
on a 2-core machine), paid by every check of the model server, every context-window lookup
and every count of a request. A context is safe to share between clients and threads.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The process's TLS context: ``httpx``'s default one (certificates verified against its
    bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set), built on the first call.

    Pass it as ``verify=`` to ``httpx.Client`` and ``httpx.AsyncClient``.
    """
    import httpx

    return httpx.create_ssl_context()
