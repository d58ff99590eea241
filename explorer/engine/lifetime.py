"""The engine process ends when the window process ends, however that ends (close, crash, SIGKILL, the OOM killer).

Nothing else would end it: its queues stay open in both processes, so it never reads an end of file, and
it waits for commands forever. The fork server (multiprocessing's, explorer.engine.worker) in turn lives
while any engine it forked lives: every child holds the write end of the server's "alive" pipe. So one
mechanism ends all three:

    window process                              engine process
    ParentLink: the write end of a pipe ──────▶  run_tied(): a thread blocks reading the read end; the
    (only the window holds it)                  window's death closes the write end: EOF -> SIGTERM to
                                                itself (the engine's cleanup runs), and after EXIT_GRACE_S
                                                os._exit, in case a step or a queue holds it up

Portable (a pipe, no prctl): the same under fork server and spawn, Linux, macOS and Windows. Then the fork
server reads EOF on its alive pipe and exits, and multiprocessing's resource tracker with it.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

EXIT_GRACE_S = 0.5   # after its own SIGTERM, how long the engine may take to unwind before os._exit


class ParentLink:
    """One pipe per engine process: `child_end` goes in the process's arguments (to `run_tied`); the window
    keeps the other end open until the process has ended (`close`)."""

    def __init__(self, context):
        self.child_end, self._parent_end = context.Pipe(duplex=False)

    def started(self):
        """After Process.start(): the child has its copy of the read end; the window needs none."""
        self.child_end.close()

    def close(self):
        self._parent_end.close()


def run_tied(child_end: Connection, target: Callable[..., Any], *args):
    """The engine process's entry point: `target(*args)`, ended when the window process is gone."""
    returned = threading.Event()
    threading.Thread(target=_exit_when_closed, args=(child_end, returned), name="gradflow-parent-watch",
                     daemon=True).start()
    try:
        return target(*args)
    finally:
        returned.set()


def _exit_when_closed(child_end: Connection, returned: threading.Event):
    try:
        while True:
            child_end.recv_bytes()   # nothing is ever sent: this returns only at EOF
    except (EOFError, OSError):
        pass
    if not returned.is_set():                  # (a window that closed normally: the process is exiting)
        os.kill(os.getpid(), signal.SIGTERM)   # as a stop the step did not heed: the engine unwinds
    time.sleep(EXIT_GRACE_S)
    os._exit(1)                                # it did not (a long step, a queue nobody reads)
