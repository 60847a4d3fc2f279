"""What the HTTP providers' clients share, per process: the certificates they verify servers
with, loaded once, and a bound on the connections they keep open between answers.

A session makes an HTTP provider per suite file × configuration × role, and each kept its
client's connection open until the process ended: a run of a few hundred suite files against a
keep-alive server (every hosted API) ran a worker out of file descriptors (EMFILE) at
``ulimit -n`` 256. Here at most :data:`MAX_KEPT_OPEN` clients stay open; using one more closes
the least recently used, whose provider opens a new one when it answers again. The bound holds
per process (each xdist worker, and in-process pytest runs together), like a connection pool.
"""

from __future__ import annotations

import functools
import os
import ssl
import threading
from collections import OrderedDict
from typing import Protocol

import httpx

MAX_KEPT_OPEN = 16  # clients: a suite's configurations take turns, item by item


class Closable(Protocol):
    def close_connections(self) -> None: ...


class KeptOpen:
    """The holders of open connections, most recently used last."""

    def __init__(self, limit: int = MAX_KEPT_OPEN) -> None:
        self.limit = limit
        self._open: OrderedDict[int, Closable] = OrderedDict()
        self._lock = threading.Lock()

    def use(self, holder: Closable) -> None:
        """``holder`` has (or is about to have) connections open: close those of the least
        recently used holders beyond the limit."""
        with self._lock:
            self._open[id(holder)] = holder
            self._open.move_to_end(id(holder))
            evicted = [self._open.popitem(last=False)[1] for _ in range(len(self._open) - self.limit)]
        for old in evicted:
            old.close_connections()

    def forget(self, holder: Closable) -> None:
        with self._lock:
            self._open.pop(id(holder), None)


KEPT_OPEN = KeptOpen()


def certificates() -> ssl.SSLContext:
    """The certificates every client verifies servers with (httpx's default: the environment's
    SSL_CERT_FILE or SSL_CERT_DIR, else certifi's), loaded once per such setting: loading them
    was most of the 0.1 s that making a client cost, which every provider paid."""
    return _certificates(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _certificates(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """Cached by the two variables that httpx reads (a conftest may set them for a run)."""
    return httpx.create_ssl_context()
