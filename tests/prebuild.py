"""Copies of the tree built in the background while other tests run.

A session fixture that builds a copy of the tree (conftest.py's san_build
and production_build) takes a minute of the suite when it builds in
line.  When the collected tests need such a build, conftest.py starts it
as the session begins: one shell running its steps in a session of its
own, at nice 19, so that it takes only the core the tests leave idle (no
thread here: the tests fork).  The fixture then waits for what is left
of it.  A build that fails fails the fixture's tests with its output, as
before; one the session never waited for is stopped (its whole process
group) and removed at the session's end.
"""

import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import helpers

TIMEOUT = 1800


class Prebuild:
    """plan(work) -> (steps, check): steps [(argv, cwd)] run in turn in a
    fresh copy of the sources, check() raising when the result is wrong;
    result(work) -> the fixture's value."""

    def __init__(self, prefix, plan, result):
        self.prefix, self.plan, self.result = prefix, plan, result
        self.work = self.proc = self.log = self.check = None

    def start(self):
        if self.proc is not None:
            return
        self.work = Path(tempfile.mkdtemp(prefix=self.prefix))
        helpers.copy_sources(self.work)
        steps, self.check = self.plan(self.work)
        script = " && ".join(f"cd {shlex.quote(str(cwd))} && "
                             f"{shlex.join(argv)}" for argv, cwd in steps)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(["nice", "-n", "19", "sh", "-c", script],
                                     stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def _kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait()

    def wait(self):
        """The fixture's value once the build is done (starting it now if
        the session did not)."""
        self.start()
        try:
            rc = self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self._kill()
            raise AssertionError(f"the build in {self.work} took more than "
                                 f"{TIMEOUT} s")
        if rc != 0:
            self.log.seek(0)
            out = self.log.read().decode(errors="replace")
            raise AssertionError(f"the build in {self.work} exited {rc}:\n"
                                 f"{out[-4000:]}")
        self.check()
        return self.result(self.work)

    def stop(self):
        """At the session's end: stop a build still running; remove it."""
        self._kill()
        if self.log is not None:
            self.log.close()
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)
