"""Copies of the tree built in the background while other tests run.

A session fixture that builds a copy of the tree (conftest.py's san_build
and production_build) takes a minute of the suite when it builds in
line.  When the collected tests need such a build, conftest.py starts it
as the session begins, at nice 19 so that it takes only the core the
tests leave idle; the fixture then waits for what is left of it.  A build
that fails fails the fixture's tests with its output, as before; one the
session never waited for is stopped and removed at the session's end.
"""

import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import helpers


class Prebuild:
    """steps(work) -> [(argv, cwd)] run in a fresh copy of the sources;
    result(work) -> the fixture's value."""

    def __init__(self, prefix, steps, result):
        self.prefix, self.steps, self.result = prefix, steps, result
        self.work = None
        self.thread = None
        self.proc = None
        self.error = None
        self.stopped = False
        self.lock = threading.Lock()

    def start(self):
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()

    def _run(self):
        try:
            self.work = Path(tempfile.mkdtemp(prefix=self.prefix))
            helpers.copy_sources(self.work)
            for argv, cwd in self.steps(self.work):
                with self.lock:
                    if self.stopped:
                        return
                    self.proc = subprocess.Popen(
                        ["nice", "-n", "19", *argv], cwd=cwd,
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True)
                out, _ = self.proc.communicate(timeout=900)
                if self.proc.returncode != 0:
                    raise AssertionError(f"{' '.join(argv)} in {cwd} exited "
                                         f"{self.proc.returncode}:\n"
                                         f"{out[-4000:]}")
        except BaseException as e:     # noqa: B902 (re-raised by wait)
            self.error = e

    def wait(self):
        """The fixture's value once the build is done (starting it now if
        the session did not)."""
        self.start()
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.result(self.work)

    def stop(self):
        """At the session's end: stop a build still running; remove it."""
        with self.lock:
            self.stopped = True
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
        if self.thread is not None:
            self.thread.join()
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
