"""A loopback TCP relay a test can cut or hang, between the app and a database server.

:meth:`TcpProxy.stop` closes its port and resets every relayed connection (what the app sees
when the database crashes or restarts), :meth:`TcpProxy.start` opens the same port again.
:meth:`TcpProxy.pause` keeps every connection open but forwards nothing more, either way, and
new connections are accepted but hear nothing (a stopped server, or a network that drops
packets without a reset); :meth:`TcpProxy.resume` forwards what was held back and carries on.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    """Relays connections from a loopback port to ``upstream``; can be cut, paused, restored."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port: int = probe.getsockname()[1]
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._flowing = threading.Event()  # cleared: paused
        self._flowing.set()
        self._pause_after: bytes | None = None  # pause once the client sends these bytes
        self.paused = threading.Event()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        self._running.set()
        threading.Thread(target=self._accept, args=(listener,), daemon=True,
                         name="proxy-accept").start()

    def stop(self) -> None:
        """Refuse new connections and reset the open ones."""
        self._running.clear()
        self._flowing.set()  # a paused pump wakes, finds its sockets shut and ends
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            cut, self._sockets = self._sockets, set()
        for sock in cut:
            # shutdown, not just close: a pump thread blocked in recv() keeps a closed socket
            # open (and its peer waiting forever); shutdown wakes it and tells the peer at once.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def pause(self, *, after: bytes | None = None) -> None:
        """Forward nothing more (``after``: once a client has sent bytes holding ``after``,
        which still reach the server, so its answer is what is held back)."""
        with self._lock:
            if after is None:
                self._hold()
            else:
                self._pause_after = after

    def resume(self) -> None:
        with self._lock:
            self._pause_after = None
            self.paused.clear()
            self._flowing.set()

    def _hold(self) -> None:
        self._pause_after = None
        self._flowing.clear()
        self.paused.set()

    def _accept(self, listener: socket.socket) -> None:
        while self._running.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            for sock in (client, server):
                sock.settimeout(None)
            with self._lock:
                if not self._running.is_set():  # stopped while this one was being accepted
                    client.close()
                    server.close()
                    return
                self._sockets |= {client, server}
            for source, sink, upward in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pump, args=(source, sink, upward),
                                 daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, upward: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if upward and self._pause_after is not None:
                    with self._lock:
                        if self._pause_after is not None and self._pause_after in chunk:
                            self._hold()
                            sink.sendall(chunk)  # this one still goes: its answer is held
                            continue
                self._flowing.wait()
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
