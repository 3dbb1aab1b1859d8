"""The package's types, as a user's type checker sees them: mypy checks the installed package's own
annotations, stubtest compares `_native.pyi` with the compiled module, and a user's typed code
(`typed_usage.py`) passes `mypy --strict` and does what its types say (the mypy tests are skipped where
mypy is absent, stubtest where it is older than 2; CI installs mypy 2). Every public name has a docstring."""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
CONFIG = PACKAGE / "pyproject.toml"

sys.path.insert(0, str(HERE))
import typed_usage  # noqa: E402


def run(tmp_path, *args):
    """`python -m ARGS...` outside the source tree, so that the installed package (the wheel) is checked."""
    pytest.importorskip("mypy")
    return subprocess.run([sys.executable, "-m", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)


def mypy(tmp_path, *args):
    """mypy with the package's settings and a cache of its own."""
    return run(tmp_path, "mypy", "--config-file", str(CONFIG), "--cache-dir", str(tmp_path / "cache"), *args)


def test_the_package_type_checks(tmp_path):
    done = mypy(tmp_path, "-p", "neardup")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_native_stubs_match_the_module(tmp_path):
    # Older stubtest flags re-exported typing names (`Any is not a type` on Python 3.9); the stubs are held to
    # mypy >= 2.4, the test extra's, which needs Python >= 3.10.
    pytest.importorskip("mypy.version", minversion="2")
    allowlists = ["--allowlist", str(PACKAGE / "stubtest-allowlist.txt")]
    try:
        import pyspark  # noqa: F401
    except ImportError:
        # neardup.spark refuses to import without pyspark (an optional extra), so stubtest cannot read it.
        unimportable = tmp_path / "without-pyspark.txt"
        unimportable.write_text("neardup\\.spark(\\..*)?\n")
        allowlists += ["--allowlist", str(unimportable)]
    done = run(tmp_path, "mypy.stubtest", "--mypy-config-file", str(CONFIG), "--ignore-disjoint-bases", *allowlists,
               "neardup")
    assert done.returncode == 0, done.stdout + done.stderr


def test_typed_user_code_passes_mypy_strict(tmp_path):
    done = mypy(tmp_path, "--strict", str(HERE / "typed_usage.py"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_typed_user_code_runs_as_typed():
    texts = ["the quick brown fox jumps over the lazy dog " * 3, "the quick brown fox jumps over the lazy dog " * 3,
             "an entirely different document about databases and their indexes"]
    prints = typed_usage.fingerprints(texts)
    assert prints[0] == prints[1] != prints[2]
    sigs = typed_usage.signatures(texts)
    assert sigs.shape == (3, 128) and sigs.dtype == "uint32"
    found = typed_usage.lsh_query({"a": [b"x", b"y"], "b": [b"z"]}, [b"x", b"y"])
    assert found == ["a"]
    hits = typed_usage.index_and_compare({"one": texts[0], "two": texts[2]}, texts[1])
    assert [id_ for id_, _ in hits] == ["one"]
    assert typed_usage.dedup_rows(texts) == 3
    assert typed_usage.signature_round_trips(texts[0]) == 1.0
    assert typed_usage.index_columns(["a", "b", "c"], texts) == 3
    assert typed_usage.integer_ids_and_buffers(texts[0])


def test_every_public_name_has_a_docstring():
    import inspect

    import neardup
    from neardup import datasketch

    def undocumented(owner_name, owner):
        for name, value in vars(owner).items():
            if name.startswith("_") or inspect.ismemberdescriptor(value):  # __slots__ members have no docs
                continue
            if callable(value) or isinstance(value, (property, classmethod, staticmethod)):
                if not (getattr(owner, name).__doc__ or "").strip():
                    yield f"{owner_name}.{name}"

    missing = []
    for name in neardup.__all__:
        value = getattr(neardup, name)
        if not (value.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(value):
            missing.extend(undocumented(name, value))
    for cls in (datasketch.MinHash, datasketch.LeanMinHash, datasketch.MinHashLSH,
                datasketch.MinHashLSHInsertionSession, datasketch.MinHashLSHDeletionSession):
        missing.extend(undocumented(cls.__name__, cls))
    assert not missing, f"no docstring: {missing}"
