"""A TCP listener that accepts connections and never reads or replies: a backend that hangs
(the one helper for it: `with blackhole() as hole`, then `hole.url` and `hole.connections`)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Blackhole:
    """Accepts every connection on a loopback port and holds it open, silent, until closed."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0), backlog=512)
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, name="blackhole", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            self._held.append(conn)

    @property
    def connections(self) -> int:
        """Connections accepted so far."""
        return len(self._held)

    def close(self) -> None:
        self._sock.close()
        for conn in self._held:
            conn.close()


@contextmanager
def blackhole() -> Iterator[Blackhole]:
    """A `Blackhole` (its base URL is `.url`), closed with every connection it holds at the end."""
    hole = Blackhole()
    try:
        yield hole
    finally:
        hole.close()
