"""The libFuzzer targets of fuzz/ run clean under ASan and UBSan.

make check builds them (make fuzz, when configure found clang or was
given --enable-fuzzing) into fuzz/bin, with seed corpora from
fuzz/mkseeds.py in fuzz/seeds.  Here each target

  * replays its regression inputs, fuzz/regress/TARGET/* (every crash
    fuzzing found, minimised: each must now run clean), then
  * fuzzes for EXTREF_LIBFUZZER_SECONDS (default 6) from its seeds,

two targets at a time.  A crash, a sanitizer report, a leak, an input
that runs over 20 s (a hang) or 2 GiB fails the target's test; the input
that did it is kept in EXTREF_LIBFUZZER_KEEP (default
/tmp/extref-libfuzzer-crashes/TARGET/) to minimise with the target's
-minimize_crash=1 and add to fuzz/regress.  Long runs: bench/fuzz.sh.

Skipped, with the reason, when the build was configured without fuzzing
(no clang); a configured build whose targets are missing fails.
"""

import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import helpers


pytestmark = pytest.mark.slow     # SECONDS of fuzzing per target

SECONDS = int(os.environ.get("EXTREF_LIBFUZZER_SECONDS", "6"))
KEEP = Path(os.environ.get("EXTREF_LIBFUZZER_KEEP",
                           "/tmp/extref-libfuzzer-crashes"))
FUZZ_DIR = helpers.REPO_ROOT / "fuzz"
BIN_DIR = helpers.BUILD_DIR / "fuzz" / "bin"
SEED_DIR = helpers.BUILD_DIR / "fuzz" / "seeds"
REGRESS_DIR = FUZZ_DIR / "regress"

# target -> (seed corpus, -max_len)
TARGETS = {
    "check": ("image", 65536),
    "repair": ("image", 65536),
    "clone": ("image", 65536),
    "rm": ("image", 65536),
    "pwrite": ("image", 65536),
    "reflink": ("image", 65536),
    "shell": ("shell", 512),
    "archive": ("archive", 16384),
    "archive_acl": ("archive_acl", 16384),
    "quota": ("quota", 65536),
    "journal": ("journal", 65536),
    "replay": ("journal", 65536),
}

ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:allocator_may_return_null=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}
# libFuzzer options: a hang is an input over 20 s; output of the target
# itself (the shell prints) is closed, libFuzzer's reports are kept.
FLAGS = ["-timeout=20", "-rss_limit_mb=2048", "-close_fd_mask=3",
         "-print_final_stats=1"]
CRASH = re.compile(r"ERROR: (?:AddressSanitizer|LeakSanitizer|libFuzzer)|"
                   r"runtime error:|SUMMARY: \w+Sanitizer|"
                   r"==\d+== ERROR")


def fuzzing_enabled():
    mk = helpers.BUILD_DIR / "Makefile"
    if not mk.is_file():
        return False
    return re.search(r"^ENABLE_FUZZING = yes$", mk.read_text(), re.M) \
        is not None


def regress_inputs(target):
    d = REGRESS_DIR / target
    return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() \
        else []


def run_target(target):
    """Replay the regressions, then fuzz; a dict of what happened."""
    exe = BIN_DIR / f"fuzz_{target}"
    corpus_name, max_len = TARGETS[target]
    env = dict(os.environ, **ENV)
    out = {"target": target, "failures": []}
    for inp in regress_inputs(target):
        res = subprocess.run([str(exe)] + FLAGS + [str(inp)], env=env,
                             capture_output=True, text=True, timeout=300)
        if res.returncode != 0 or CRASH.search(res.stderr):
            out["failures"].append(f"regression input {inp} (exit "
                                   f"{res.returncode}):\n"
                                   + res.stderr[-4000:])
    work = Path(tempfile.mkdtemp(prefix=f"extref-libfuzzer-{target}-"))
    try:
        corpus = work / "corpus"
        corpus.mkdir()
        art = work / "artifacts"
        art.mkdir()
        cmd = [str(exe)] + FLAGS + [
            f"-max_total_time={SECONDS}", f"-max_len={max_len}",
            "-seed=1", f"-artifact_prefix={art}/",
            str(corpus), str(SEED_DIR / corpus_name)]
        res = subprocess.run(cmd, env=env, capture_output=True, text=True,
                             timeout=SECONDS + 600)
        out["stats"] = re.findall(r"^(?:#\d+\s+DONE.*|stat::\w+:\s+\d+)$",
                                  res.stderr, re.M)
        crashes = sorted(art.iterdir())
        if res.returncode != 0 or crashes or CRASH.search(res.stderr):
            kept = []
            if crashes:
                dest = KEEP / target
                dest.mkdir(parents=True, exist_ok=True)
                for c in crashes:
                    shutil.copy(c, dest / c.name)
                    kept.append(str(dest / c.name))
            out["failures"].append(
                f"fuzzing (exit {res.returncode}), inputs kept: {kept}\n"
                f"$ {' '.join(cmd)}\n" + res.stderr[-6000:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


@pytest.fixture(scope="module")
def results():
    if not fuzzing_enabled():
        pytest.skip("fuzzing not configured (configure found no clang with "
                    "libFuzzer; scripts/install-deps installs it)")
    missing = [t for t in TARGETS if not (BIN_DIR / f"fuzz_{t}").is_file()]
    if missing or not (SEED_DIR / "shell.img").is_file():
        pytest.fail(f"fuzz targets or seeds missing in {BIN_DIR.parent} "
                    f"({missing}): run make fuzz", pytrace=False)
    with ThreadPoolExecutor(2) as pool:
        return {r["target"]: r for r in pool.map(run_target, TARGETS)}


@pytest.mark.parametrize("target", list(TARGETS))
def test_target_runs_clean(results, target):
    r = results[target]
    assert not r["failures"], "\n\n".join(r["failures"])
    # It fuzzed: libFuzzer reached its time bound and said so.
    assert any("DONE" in s for s in r["stats"]), r["stats"]


def test_every_target_is_tested():
    """A new fuzz/fuzz_NAME.c must be added to TARGETS here."""
    names = {p.stem[len("fuzz_"):] for p in FUZZ_DIR.glob("fuzz_*.c")}
    assert names == set(TARGETS)
    assert {p.name for p in REGRESS_DIR.iterdir()} <= set(TARGETS)
