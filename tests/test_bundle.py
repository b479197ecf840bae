"""Hostile and broken bundles are refused whole, with every problem named, and the store's
files and git HEAD stay exactly as they were. Export is deterministic."""

from __future__ import annotations

import json
import os
import shutil
import stat
import zipfile
from pathlib import Path

import pytest
from conftest import Cli, git, tree_snapshot

from memctl.exchange.bundle import MANIFEST_NAME, BundleError, Limits, read_bundle
from memctl.store import Store

NOTE = "---\nid: 01jdz4k2m8x7b3qv\ntype: fact\nproject: demo\ncreated: 2026-11-30T09:00:00.000Z\n" \
       "updated: 2026-11-30T09:00:00.000Z\n---\nA good note.\n"
GOOD = ("demo/notes/fact/good-01jdz4k2m8x7b3qv.md", NOTE.encode())


def make_zip(path: Path, entries: list[tuple[str, bytes] | zipfile.ZipInfo | tuple], compress=True) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as archive:
        for item in entries:
            if isinstance(item, tuple) and isinstance(item[0], zipfile.ZipInfo):
                archive.writestr(item[0], item[1])
            else:
                archive.writestr(item[0], item[1])
    return path


def with_mode(name: str, mode: int, data: bytes = b"x") -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info, data


def with_method(name: str, method: int, data: bytes) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.compress_type = method
    return info, data


def assert_refused(cli, store_path, archive, *expected: str):
    before_tree, before_head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    result = cli("import", str(archive))
    assert result.exit_code == 1, result.stdout + result.stderr
    assert result.stderr.startswith("error:")
    for text in expected:
        assert text in result.stderr, result.stderr
    assert result.stdout == ""
    assert tree_snapshot(store_path) == before_tree
    assert git(store_path, "rev-parse", "HEAD") == before_head
    assert not list((store_path / ".memctl").glob("txn-*"))
    return result


HOSTILE = {
    "escape": ([GOOD, ("../evil.md", b"x")], ["../evil.md", "escapes the store"]),
    "deep-escape": ([GOOD, ("demo/notes/../../../evil.md", b"x")], ["escapes the store"]),
    "absolute": ([GOOD, ("/tmp/evil.md", b"x")], ["/tmp/evil.md", "absolute path"]),
    "windows": ([GOOD, ("demo\\..\\..\\evil.md", b"x")], ["backslash"]),
    "git-hook": ([GOOD, (".git/hooks/post-commit", b"#!/bin/sh\nrm -rf ~\n")], [".git/"]),
    "symlink": ([GOOD, with_mode("demo/notes/fact/link.md", stat.S_IFLNK | 0o777, b"/etc/passwd")],
                ["symbolic link"]),
    "fifo": ([GOOD, with_mode("demo/notes/fact/pipe.md", stat.S_IFIFO | 0o644)], ["not a regular file"]),
    "not-utf8": ([GOOD, ("demo/notes/fact/latin1.md", "caf\xe9 au lait\n".encode("latin-1"))],
                 ["not text"]),
    "binary": ([GOOD, ("demo/notes/fact/blob.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00")], ["not text"]),
    "python-tag": ([GOOD, ("demo/notes/fact/evil.md",
                           b"---\nid: !!python/object/apply:os.system ['touch /tmp/pwned']\n---\nx\n")],
                   ["unsafe YAML tag", "python/object"]),
    "custom-tag": ([GOOD, ("demo/notes/fact/tag.md", b"---\nid: !secret abc\n---\nx\n")],
                   ["unsafe YAML tag"]),
    "bomb": ([GOOD, with_method("demo/notes/fact/bomb.md", zipfile.ZIP_BZIP2, b"A" * (4 * 2**20))],
             ["zip bomb"]),
    "lzma-bomb": ([GOOD, with_method("demo/notes/fact/bomb.md", zipfile.ZIP_LZMA, b"A" * (12 * 2**20))],
                  ["zip bomb"]),
    "giant": ([GOOD, ("demo/notes/fact/giant.md", os.urandom(9 * 2**20).hex().encode())],
              ["over the 16 MB size limit"]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_is_refused_and_the_store_is_untouched(cli, store_path, tmp_path, case):
    cli.ok("add", "something already here")
    entries, expected = HOSTILE[case]
    archive = make_zip(tmp_path / f"{case}.zip", entries)
    assert_refused(cli, store_path, archive, *expected)
    assert not (tmp_path / "evil.md").exists() and not Path("/tmp/pwned").exists()


def test_deflate_cannot_reach_the_bomb_ratio_so_every_export_imports(cli, store_path, tmp_path):
    """The zip-bomb ratio is above what deflate can reach (1032:1), so a note of repeated
    lines (a build log), or of one character repeated, exports and imports; a bzip2 or LZMA
    entry past it is still a bomb (HOSTILE above)."""
    log = "Build log of the failing CI run\n" + \
        "2026-12-01 10:00:00 WARN retrying connection to db:5432\n" * 27_000
    (store_path / "demo/notes/fact").mkdir(parents=True)
    (store_path / "demo/notes/fact/ci-log.md").write_text(log)
    (store_path / "demo/notes/fact/rule.md").write_text("-" * (3 * 2**20) + "\n")
    exported = tmp_path / "repetitive.zip"
    cli.ok("export", str(exported))
    with zipfile.ZipFile(exported) as archive:
        ratios = [info.file_size / info.compress_size for info in archive.infolist()
                  if info.file_size > Limits().ratio_floor_bytes]
    assert len(ratios) == 2 and max(ratios) > 1000, "deflate's best, about 1028:1"
    assert max(ratios) < Limits().max_ratio
    other = tmp_path / "other"
    Store.init(other)
    result = Cli(other).ok("import", str(exported), "--json").json()
    assert len(result["added"]) == 2 and result["rejected"] == []
    assert (other / "demo/notes/fact/ci-log.md").read_text() == log


def test_export_leaves_out_a_file_too_big_for_an_import_and_the_zip_imports(cli, store_path, tmp_path):
    kept = cli.ok("add", "a small note", "--json").json()["id"]
    giant = store_path / "demo/notes/fact/giant.md"
    giant.write_text("a hand-dropped dump\n" + "0123456789abcdef" * (17 * 2**16))
    exported = tmp_path / "giant.zip"
    report = cli.ok("export", str(exported), "--json").json()
    assert [item["path"] for item in report["broken"]] == ["demo/notes/fact/giant.md"]
    assert "16 MB" in report["broken"][0]["message"]
    other = tmp_path / "other"
    Store.init(other)
    assert Cli(other).ok("import", str(exported), "--json").json()["added"] == [kept]


def test_the_advice_for_a_note_too_big_for_an_import_is_one_that_works(cli, store_path, tmp_path):
    """A note grown by hand past the 16 MB an import takes: export left it out and advised
    `memctl edit` with its id, which cannot open a file over 10 MB (no command reads one:
    `no note with id`). The advice is now to shorten the file in a text editor, by its path,
    and following it makes the next export carry the note."""
    note_id = cli.ok("add", "a note that grew", "--json").json()["id"]
    [path] = store_path.glob(f"demo/notes/*/*{note_id}.md")
    small = path.read_text()
    path.write_text(small + (("0123456789abcdef" * 4)[:63] + "\n") * (33 * 2**13))
    cli.ok("reindex")  # (as on a machine that never indexed its smaller version)
    result = cli.ok("export", str(tmp_path / "big.zip"))
    relpath = path.relative_to(store_path).as_posix()
    # (16.5 MB: it said "16 MB, over the 16 MB")
    assert f"{relpath}:1: 16.5 MB, over the 16 MB" in result.stderr, result.stderr
    assert "`memctl edit` with the note's id" not in result.stderr, result.stderr
    assert "in a text editor" in result.stderr and "10 MB" in result.stderr, result.stderr
    refused = cli("edit", note_id, env={"EDITOR": "true"})
    assert refused.exit_code == 1 and "no note with id" in refused.stderr, refused.stderr
    path.write_text(small + "shortened by hand\n")
    report = cli.ok("export", str(tmp_path / "fixed.zip"), "--json").json()
    assert report["broken"] == [], report


def test_every_problem_is_listed_in_one_refusal(cli, store_path, tmp_path):
    archive = make_zip(tmp_path / "many.zip", [
        GOOD, ("../a.md", b"x"), ("/b.md", b"x"), ("demo/notes/fact/c.md", b"\xff\xfe"),
    ])
    result = assert_refused(cli, store_path, archive, "../a.md", "/b.md", "demo/notes/fact/c.md")
    assert "good-01jdz4k2m8x7b3qv" not in result.stderr


def test_unknown_manifest_version_and_tampering_are_refused(cli, store_path, tmp_path):
    cli.ok("add", "a note to export")
    exported = tmp_path / "export.zip"
    cli.ok("export", str(exported))
    with zipfile.ZipFile(exported) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files[MANIFEST_NAME])
    future = dict(files, **{MANIFEST_NAME: json.dumps(dict(manifest, version=99)).encode()})
    assert_refused(cli, store_path, make_zip(tmp_path / "future.zip", list(future.items())),
                   "unknown bundle format version 99")
    note_path = next(n for n in files if n.startswith("demo/notes/"))
    tampered = dict(files, **{note_path: files[note_path] + b"tampered\n"})
    assert_refused(cli, store_path, make_zip(tmp_path / "tampered.zip", list(tampered.items())),
                   "sha256")
    foreign = dict(files, **{MANIFEST_NAME: b'{"format": "something-else"}'})
    assert_refused(cli, store_path, make_zip(tmp_path / "foreign.zip", list(foreign.items())),
                   "unknown bundle format")


def test_size_and_count_limits_never_trust_the_headers(tmp_path):
    many = make_zip(tmp_path / "many.zip", [(f"demo/notes/fact/n{i}.md", b"x\n") for i in range(20)])
    with pytest.raises(BundleError, match="too many entries"):
        read_bundle(many, Limits(max_entries=10))
    big = make_zip(tmp_path / "big.zip", [("demo/notes/fact/big.md", os.urandom(300_000).hex().encode())])
    with pytest.raises(BundleError, match="size limit"):
        read_bundle(big, Limits(max_entry_bytes=100_000))
    total = make_zip(tmp_path / "total.zip", [(f"demo/notes/fact/n{i}.md", b"y" * 60_000) for i in range(5)],
                     compress=False)
    with pytest.raises(BundleError, match="size limit"):
        read_bundle(total, Limits(max_total_bytes=200_000))
    # a header that under-states the size: the reader stops at the real data, never trusts it
    liar = tmp_path / "liar.zip"
    make_zip(liar, [("demo/notes/fact/liar.md", b"z" * 50_000)])
    data = bytearray(liar.read_bytes())
    central = data.rfind(b"PK\x01\x02")
    data[central + 24:central + 28] = (10).to_bytes(4, "little")  # uncompressed size: 10 bytes
    liar.write_bytes(bytes(data))
    with pytest.raises(BundleError):
        read_bundle(liar)


def test_invalid_front_matter_refuses_unless_skip_invalid(cli, store_path, tmp_path):
    broken = ("demo/notes/fact/broken.md", b"---\nid: [unclosed\n---\nbody\n")
    archive = make_zip(tmp_path / "mixed.zip", [GOOD, broken])
    assert_refused(cli, store_path, archive, "broken.md", "--skip-invalid")
    result = cli.ok("import", str(archive), "--skip-invalid", "--json")
    report = result.json()
    assert report["added"] == ["01jdz4k2m8x7b3qv"]
    assert [r["path"] for r in report["rejected"]] == ["demo/notes/fact/broken.md"]
    assert report["rejected"][0]["reason"]
    assert not (store_path / "demo/notes/fact/broken.md").exists()


def test_a_folder_with_a_link_is_refused(cli, store_path, tmp_path):
    folder = tmp_path / "incoming"
    (folder / "demo" / "notes" / "fact").mkdir(parents=True)
    (folder / GOOD[0]).write_bytes(GOOD[1])
    os.symlink("/etc/passwd", folder / "demo/notes/fact/passwd.md")
    assert_refused(cli, store_path, folder, "symbolic link")


# `memctl export ZIP` that stops in the middle of writing its zip (after its first entry)
# until $GO exists, having said so by making $PAUSED.
_EXPORT_PAUSED_HALFWAY = """
import os, sys, time
from memctl.exchange import bundle
real_add = bundle._add
def add(*args):
    real_add(*args)
    if not os.path.exists(os.environ["PAUSED"]):
        open(os.environ["PAUSED"], "w").close()
        while not os.path.exists(os.environ["GO"]):
            time.sleep(0.01)
bundle._add = add
from memctl.cli import main
sys.argv = ["memctl", "export", sys.argv[1]]
main()
"""


def test_two_exports_to_one_zip_at_once_both_write_it_whole(cli, store_path, tmp_path):
    """Two exports to the same zip at once shared one temp file, `.NAME.tmp`: the second
    wrote into the first's and renamed it into place while the first still wrote, and the
    first failed, `error: No such file or directory (….tmp)`. Each now writes its own, locked
    while it writes, so both succeed and the zip is whole. The temp file of an export killed
    while it wrote (unlocked, unchanged for a minute) is removed by the next export to that
    zip; one locked (an export running elsewhere: another machine of a shared folder) is
    not, however old."""
    import fcntl
    import subprocess
    import sys
    import time

    cli.ok("add", "first note for the zip")
    cli.ok("add", "second note, 中文也可以", "--type", "decision")
    target = tmp_path / "out" / "memory.zip"
    target.parent.mkdir()
    killed = target.parent / f".{target.name}.0123456789ab.tmp"  # an export killed halfway
    killed.write_bytes(b"PK half a zip")
    running = target.parent / f".{target.name}.ba9876543210.tmp"  # one running elsewhere
    running.write_bytes(b"PK half a zip")
    minutes_ago = time.time() - 120
    for left in (killed, running):
        os.utime(left, (minutes_ago, minutes_ago))
    holder = open(running, "rb")  # noqa: SIM115 - held locked until the end
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    paused, go = tmp_path / "paused", tmp_path / "go"
    env = {**os.environ, "MEMCTL_STORE": str(store_path), "PAUSED": str(paused), "GO": str(go)}
    first = subprocess.Popen([sys.executable, "-c", _EXPORT_PAUSED_HALFWAY, str(target)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not paused.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert paused.exists(), first.communicate()
        cli.ok("export", str(target))  # the second, while the first is halfway
        go.touch()
        out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    with zipfile.ZipFile(target) as archive:
        assert archive.testzip() is None and MANIFEST_NAME in archive.namelist()
    holder.close()
    assert sorted(os.listdir(target.parent)) == sorted([target.name, running.name])


def test_export_is_deterministic(cli, store_path, tmp_path):
    cli.ok("add", "first note for the zip")
    cli.ok("add", "second note, 中文也可以", "--type", "decision")
    cli.ok("project", "add", "constraints", "no ORM")
    one, two = tmp_path / "one.zip", tmp_path / "two.zip"
    cli.ok("export", str(one))
    cli.ok("list")  # reading changes nothing
    cli.ok("export", str(two))
    assert one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(one) as archive:
        names = archive.namelist()
        assert names[0] == MANIFEST_NAME and names[1:] == sorted(names[1:])
        for info in archive.infolist():
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
            assert info.external_attr >> 16 == stat.S_IFREG | 0o644
        manifest = json.loads(archive.read(MANIFEST_NAME))
    assert manifest["format"] == "memctl-bundle" and manifest["version"] == 1
    assert manifest["machine"] and manifest["time"]
    assert set(manifest["entries"]) == set(names[1:])


def test_an_empty_note_memory_or_scratchpad_in_a_zip_does_not_parse(cli, store_path, tmp_path):
    """A zero-byte entry is a file that does not parse (docs/format.md): the import refuses
    it, naming each, and --skip-invalid leaves them out; none is ever reported as added."""
    empty = ["demo/notes/fact/empty-01jdz4k2m8x7b3qw.md", "demo/MEMORY.md", "demo/SCRATCHPAD.md"]
    archive = make_zip(tmp_path / "empty.zip", [GOOD, *((name, b"") for name in empty)])
    assert_refused(cli, store_path, archive, *(f"{name}:1: the file is empty" for name in empty))
    report = cli.ok("import", str(archive), "--skip-invalid", "--json").json()
    assert report["added"] == ["01jdz4k2m8x7b3qv"]
    assert sorted(r["path"] for r in report["rejected"]) == sorted(empty)
    assert not (store_path / empty[0]).exists()


def corrupt_stream(path: Path, method: int) -> Path:
    """A zip whose one entry's compressed stream is garbled right after its local header."""
    name = "demo/notes/fact/x.md"
    with zipfile.ZipFile(path, "w", method) as archive:
        archive.writestr(name, "---\ntype: fact\n---\nhello world\n" * 50)
    data = bytearray(path.read_bytes())
    start = 30 + len(name) + (4 if method == zipfile.ZIP_LZMA else 0)
    for index in range(start, start + 20):
        data[index] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA, zipfile.ZIP_BZIP2])
def test_a_corrupt_compressed_stream_is_a_one_line_refusal(cli, store_path, tmp_path, method):
    archive = corrupt_stream(tmp_path / "corrupt.zip", method)
    result = assert_refused(cli, store_path, archive, "demo/notes/fact/x.md", "cannot be read")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("field, value", [("history", 5), ("history", True), ("history", [1]),
                                          ("updated", ["x"])])
def test_a_malformed_manifest_entry_is_a_one_line_refusal(cli, store_path, tmp_path, field, value):
    cli.ok("add", "a note to export")
    exported = tmp_path / "export.zip"
    cli.ok("export", str(exported))
    with zipfile.ZipFile(exported) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files[MANIFEST_NAME])
    note_path = next(n for n in files if n.startswith("demo/notes/"))
    manifest["entries"][note_path][field] = value
    files[MANIFEST_NAME] = json.dumps(manifest).encode()
    assert_refused(cli, store_path, make_zip(tmp_path / "odd.zip", list(files.items())),
                   note_path, "malformed manifest")


@pytest.mark.parametrize("options", [(), ("--from", "markdown")])
def test_a_folder_with_a_file_name_that_is_not_utf8_is_refused(cli, store_path, tmp_path, options):
    folder = tmp_path / "incoming"
    (folder / "demo" / "notes" / "fact").mkdir(parents=True)
    (folder / GOOD[0]).write_bytes(GOOD[1])
    with open(os.path.join(os.fsencode(folder), b"demo", b"notes", b"fact", b"caf\xe9.md"), "wb") as f:
        f.write(b"---\ntype: fact\n---\nLatin-1 name\n")
    before = tree_snapshot(store_path)
    result = cli("import", str(folder), *options)
    assert result.exit_code == 1 and result.stderr.startswith("error:"), result.stderr
    assert "caf\\xe9.md" in result.stderr and "not UTF-8" in result.stderr
    assert tree_snapshot(store_path) == before


@pytest.mark.parametrize("key", ["ghp_1234567890abcdefghijklmnopqrstuvwxyzAB", "AKIAIOSFODNN7QWERTYZ"])
def test_a_secret_in_an_entry_name_is_refused_like_one_in_its_content(cli, store_path, tmp_path, key):
    name = f"demo/notes/fact/deploy-{key}.md"
    archive = make_zip(tmp_path / "named.zip", [(name, b"---\ntype: fact\n---\nHow we deploy\n")])
    result = assert_refused(cli, store_path, archive, "secret", "--allow-secret")
    assert key not in result.stderr, "the refusal shows the key masked"
    assert cli("import", str(archive), "--allow-secret").exit_code == 0
    assert (store_path / name).is_file()


def test_a_conflict_copy_carried_by_a_zip_is_reported_as_written(cli, store_path, tmp_path):
    """Bundles carry conflict copies (docs/sync.md): one the zip brings is named in the
    report, the output and the commit message, never a silent write under "nothing to do"."""
    path = ".conflicts/demo/notes/fact/p-01m8zzzzzzzzzzzz.abcdefabcdef.md"
    copy = NOTE.replace("01jdz4k2m8x7b3qv", "01m8zzzzzzzzzzzz").encode()
    archive = make_zip(tmp_path / "c.zip", [(path, copy)])
    other = Cli(tmp_path / "other")
    other.ok("init", str(other.store))
    assert other.ok("import", str(archive), "--json").json()["carried_copies"] == [path]
    text = cli.ok("import", str(archive))
    assert "nothing to do" not in text.stderr + text.stdout
    assert "1 carried conflict copy" in text.stderr + text.stdout
    assert "conflict cop" in git(store_path, "log", "-1", "--format=%s")
    assert path in cli.ok("conflicts", "--json").stdout


def _manifest_bundle(path: Path, exported: Path, files: dict[str, bytes]) -> Path:
    """A memctl zip holding `files` alone, its manifest (that of `exported`) listing them."""
    import hashlib

    with zipfile.ZipFile(exported) as archive:
        manifest = json.loads(archive.read(MANIFEST_NAME))
    manifest["entries"] = {name: {"history": [], "sha256": hashlib.sha256(data).hexdigest(),
                                  "size": len(data), "updated": None}
                           for name, data in files.items()}
    return make_zip(path, [*files.items(), (MANIFEST_NAME, json.dumps(manifest).encode())])


def test_an_import_names_what_it_ignored(cli, store_path, tmp_path):
    """A zip of entries that are no memory said "nothing to do" and no more, as if it had been
    empty: the import now names what it left out (all of it in `--json`; in the text, all of
    it when it takes nothing else, else what is no part of a store), and changes nothing."""
    cli.ok("add", "a note to export")
    exported = tmp_path / "export.zip"
    cli.ok("export", str(exported))
    before, head = tree_snapshot(store_path), git(store_path, "rev-parse", "HEAD")
    only = _manifest_bundle(tmp_path / "only.zip", exported, {".gitattributes": b"* -text\n"})
    result = cli.ok("import", str(only))
    assert result.stderr.splitlines() == ["ignored, as no memory memctl imports: .gitattributes",
                                          "nothing to do"], result.stderr
    assert cli.ok("import", str(only), "--json").json()["ignored"] == [".gitattributes"]
    assert tree_snapshot(store_path) == before and git(store_path, "rev-parse", "HEAD") == head
    mixed = make_zip(tmp_path / "mixed.zip", [GOOD, ("demo/diagram.png", b"\x89PNG"),
                                              (".gitignore", b".memctl/\n")])
    result = cli.ok("import", str(mixed))
    assert "ignored, as no memory memctl imports: demo/diagram.png\n" in result.stderr
    assert ".gitignore" not in result.stderr and "1 added" in result.stderr
    assert cli.ok("import", str(mixed), "--json").json()["ignored"] == [".gitignore",
                                                                        "demo/diagram.png"]


def test_a_settings_file_with_a_number_of_thousands_of_digits_is_named_not_a_traceback(
        cli, store_path, tmp_path):
    """A zip's `memctl.toml` holding a number past Python's 4,300-digit int conversion made
    the import's check a ValueError traceback; it is named in the refusal like any settings
    file that does not parse."""
    huge = "[search]\ndefault_limit = 1" + "0" * 5000 + "\n"
    bundle = make_zip(tmp_path / "huge-number.zip", [GOOD, ("memctl.toml", huge.encode())])
    assert_refused(cli, store_path, bundle, "memctl.toml", "a number of thousands of digits")


def test_a_settings_file_with_a_key_of_thousands_of_parts_is_named_not_read(cli, store_path,
                                                                             tmp_path):
    """Python's TOML reader is quadratic in a key's parts: a zip's `memctl.toml` of one key of
    200,000 parts (400 KB) would hold an import for hours and take many GB, and so would an
    export of a store holding it. The key is counted first (memctl.core.tomlkeys): the
    import names the file in its refusal, the export leaves it out and says so."""
    long_key = "[search]\nx" + ".a" * 200_000 + " = 1\n"
    bundle = make_zip(tmp_path / "long-key.zip", [GOOD, ("memctl.toml", long_key.encode())])
    assert_refused(cli, store_path, bundle, "memctl.toml", "a key of 200,001 parts")
    (store_path / "memctl.toml").write_text(long_key)
    exported = tmp_path / "export.zip"
    result = cli.ok("export", str(exported))
    assert result.stderr.startswith(
        "warning: memctl.toml:1: settings do not parse: line 2: a key of 200,001 parts, where "
        "memctl's settings have two ([section], then key = value); left out of the zip (memctl "
        "import would refuse it): fix it, then export again\n"), result.stderr
    with zipfile.ZipFile(exported) as archive:
        assert "memctl.toml" not in archive.namelist()


def test_a_note_whose_file_name_lacks_its_id_is_not_listed_as_removed(cli, store_path, tmp_path):
    """A note named by hand (`a.md`, its id only in the front matter): history knows it by
    its file name's key too, and every export listed that key in the manifest's `removed`,
    a removal of a note the zip carries."""
    folder = store_path / "demo" / "notes" / "fact"
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("---\nid: 01handnamed00001\ntype: fact\nproject: demo\n"
                                 "created: 2026-11-01T00:00:00Z\n---\nNamed by hand\n")
    git(store_path, "add", "-A")
    git(store_path, "commit", "-q", "-m", "a note named by hand")
    cli.ok("show", "01handnamed00001")
    archive = tmp_path / "out.zip"
    cli.ok("export", str(archive))
    with zipfile.ZipFile(archive) as opened:
        manifest = json.loads(opened.read(MANIFEST_NAME))
        assert "demo/notes/fact/a.md" in opened.namelist()
    assert manifest.get("removed", {}) == {}, manifest.get("removed")


def test_a_conflict_copy_the_import_makes_and_the_zip_carries_is_counted_once(tmp_path):
    """The zip carries the conflict copy of this store's own losing version (made on the other
    machine when it imported this store's edit), and this import, losing the same way, keeps
    that very copy: one file, named under "conflict copy kept" and counted again as a
    "carried conflict copy", in the text, in `--json` and in the commit message. Now it is
    one conflict, the copy named once."""
    a, b = Cli(tmp_path / "a", "alpha"), Cli(tmp_path / "b", "alpha")
    a.ok("init", str(a.store))
    b.ok("init", str(b.store))
    note_id = a.ok("add", "the shared note about tea", "--force", "--json").json()["id"]
    a.ok("export", str(tmp_path / "a.zip"))
    b.ok("import", str(tmp_path / "a.zip"))
    [in_a] = a.store.glob(f"alpha/notes/*/*{note_id}.md")
    [in_b] = b.store.glob(f"alpha/notes/*/*{note_id}.md")
    in_b.write_text(in_b.read_text() + "b's edit\n")
    b("sync", "--no-push", env={"MEMCTL_NOW": "2026-11-30T13:00:00Z"})
    in_a.write_text(in_a.read_text() + "a's edit, later\n")
    a("sync", "--no-push", env={"MEMCTL_NOW": "2026-11-30T14:00:00Z"})
    b.ok("export", str(tmp_path / "b.zip"))
    made = a.ok("import", str(tmp_path / "b.zip"), "--json").json()["conflict_copies"]
    assert len(made) == 1  # b's version lost, kept in a as a conflict copy
    a.ok("export", str(tmp_path / "a2.zip"))
    (tmp_path / "b2").mkdir()
    shutil.copytree(b.store, tmp_path / "b2" / "store", symlinks=True)
    b2 = Cli(tmp_path / "b2" / "store", "alpha")
    shown = b.ok("import", str(tmp_path / "a2.zip"), "--json").json()
    assert shown["conflict_copies"] == made and shown["conflicts"] == [note_id], shown
    assert shown["carried_copies"] == [], shown
    text = b2.ok("import", str(tmp_path / "a2.zip"))
    said = text.stdout + text.stderr
    assert said.count(made[0]) == 2, said  # its write, and once under the copies kept
    assert "1 updated, 1 conflict\n" in said and "carried" not in said, said
    subject = git(b2.store, "log", "-1", "--format=%s")
    assert "carried" not in subject and "1 conflict copy" in subject, subject


def test_a_fifo_named_like_an_export_temp_file_does_not_hang_the_export(cli, store_path,
                                                                        tmp_path):
    """The cleanup of a killed export's temp file opened each `.NAME.<random>.tmp` for
    reading: a FIFO of that name (anyone who may write the folder can make one) blocked the
    open until a writer came, and `memctl export` hung for ever. It now opens regular files
    only, without waiting, and leaves the FIFO as it is."""
    import subprocess
    import sys

    cli.ok("add", "first note for the zip")
    target = tmp_path / "out" / "memory.zip"
    target.parent.mkdir()
    fifo = target.parent / f".{target.name}.0123456789ab.tmp"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "memctl", "--store", str(store_path), "export",
                           str(target)], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert zipfile.is_zipfile(target) and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_export_removes_only_temp_files_it_could_have_made(cli, store_path, tmp_path):
    """The cleanup of a killed export's temp file took any `.NAME.<anything>.tmp` unchanged
    for a minute: a person's own `.memory.zip.notes.tmp` beside the zip, or the temp file of
    an export to another zip (`memory.zip.old.zip`), was deleted. Only the name an export
    makes, `.NAME.<12 hex digits>.tmp`, is removed now."""
    import time

    cli.ok("add", "first note for the zip")
    target = tmp_path / "out" / "memory.zip"
    target.parent.mkdir()
    killed = target.parent / f".{target.name}.0123456789ab.tmp"
    theirs = [target.parent / f".{target.name}.{middle}.tmp"
              for middle in ("notes", "old.zip.0123456789ab", "0123456789AB", "")]
    minutes_ago = time.time() - 120
    for path in (killed, *theirs):
        path.write_text("kept\n")
        os.utime(path, (minutes_ago, minutes_ago))
    cli.ok("export", str(target))
    assert not killed.exists()
    assert [path.read_text() for path in theirs] == ["kept\n"] * len(theirs)
