"""The manual pages and the tools' usage, as a user reads them."""

import re

import helpers

DOCS = helpers.REPO_ROOT / "docs"


def test_man_pages_one_date_scheme():
    """Every page's .TH carries the same "Month YYYY" date and the
    package's version."""
    version = re.search(r"AC_INIT\(\[extref\], \[([^]]+)\]",
                        (helpers.REPO_ROOT / "configure.ac").read_text())[1]
    heads = {}
    for page in sorted(DOCS.glob("*.[0-9]")):
        th = re.search(r'^\.TH \S+ \d "([^"]*)" "([^"]*)"', page.read_text(),
                       re.M)
        assert th, page
        heads[page.name] = th.groups()
    assert len(heads) >= 4, heads
    dates = {d for d, _ in heads.values()}
    assert len(dates) == 1, heads
    assert re.fullmatch(r"(January|February|March|April|May|June|July|"
                        r"August|September|October|November|December) "
                        r"\d{4}", dates.pop()), heads
    assert {v for _, v in heads.values()} == {f"extref {version}"}, heads


def test_mkfs_usage_lists_every_form():
    out = helpers.run([helpers.binary("mkfs.extref"), "--help"]).stdout
    head = out.split("\n\n")[0]
    for form in ("IMAGE [SIZE]", "-d SOURCE|ARCHIVE", "--convert",
                 "--update -d SOURCE"):
        assert form in head, head


def test_mkfs_bad_option_short_usage():
    res = helpers.run([helpers.binary("mkfs.extref"), "-Z", "x.img"],
                      check=False)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert "invalid option" in lines[0]
    assert lines[-1] == "Try 'mkfs.extref --help' for more information."
    assert len(lines) <= 9, res.stderr
    assert "-d SOURCE|ARCHIVE" in res.stderr
