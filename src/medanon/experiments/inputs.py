"""Experiment inputs that the workers read themselves (``medanon experiment --input``).

Scattering the input from the client means the client must hold the whole data set and push it
through the network to the workers; with real-size quarters the client may be a laptop that
cannot. So with ``--input`` a task carries only an :class:`InputRef`, a few strings: where the
input is and the SHA-256 of its content. Each worker process reads the input once, keeps it
(:func:`resolve`: a small per-process cache keyed by kind, location and content digest) and every
later task on that worker finds it there.

Where the input can be:

* a path that every worker sees at the same absolute path (a shared filesystem such as NFS; on a
  LocalCluster, any local path);
* an fsspec URL (``s3://``, ``gs://``, ``az://``, ``https://``, ``file://``, ...), downloaded by
  each worker into its scratch folder; the URL's fsspec implementation (``s3fs``, ``gcsfs``,
  ``adlfs``, ...) and its credentials must be on the workers, not on the client.

What it can hold, for the periodic experiments (kind ``faers``): a medanon release store (the
records ``medanon ingest`` wrote, the fastest to read: the FAERS text is parsed once, by the
ingest) or a FAERS source (zip, quarter folder, folder of quarters), which every worker parses.
For ``ipa`` a table (with its schema TOML) and for ``clinsimrr`` ``DIAGNOSES_ICD`` (with
``ADMISSIONS``) are read the same way.

Every worker hashes what it read. The runner first asks each worker to read the input
(:func:`describe`) and refuses to start when two workers saw different contents (a stale copy, a
path that is another file on another machine); a worker that joins later checks its digest on
its first task. A store is copied to the worker's scratch folder before it is opened, so the
workers never hold a lock on a store the data holder may be writing.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

from ..api import Dataset
from ..data.loaders.faers import FaersQuarter
from ..errors import MedanonError, ValidationError
from ..periods import parse_period
from ..store import ReleaseStore

__all__ = ["InputRef", "KINDS", "cached_inputs", "describe", "input_ref", "is_url", "resolve"]

#: kind -> the roles of its files (the first one is the input itself)
KINDS = {"faers": ("input",), "table": ("input", "schema"), "ehr": ("input", "admissions")}
#: inputs a worker process keeps at once: the grid's input, plus one so that two experiments
#: sharing a cluster do not evict each other's input on every task
CACHE_SIZE = 2
_CHUNK = 1 << 22
_DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of a DuckDB database file

_cache: OrderedDict[tuple, Any] = OrderedDict()
_lock = threading.Lock()  # one load at a time per process: the worker's other threads wait for it


@dataclass(frozen=True)
class InputRef:
    """Where a task's input is: what a task receives instead of the data.

    Attributes:
        kind: ``faers``, ``table`` or ``ehr`` (:data:`KINDS`).
        files: (role, location) pairs; a location is an absolute path or a URL.
        sha256: The content digest the workers agreed on (None before they read it).
        options: Per-experiment settings applied to the loaded input, not part of what is read
            (``split_seed`` of the ``ehr`` kind).
    """

    kind: str
    files: tuple[tuple[str, str], ...]
    sha256: str | None = None
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def location(self) -> str:
        return self.files[0][1]


def is_url(location: str) -> bool:
    """``scheme://...`` (what fsspec reads), as opposed to a filesystem path."""
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location) is not None


def _normalised(role: str, location: str | Path) -> str:
    text = str(location)
    if isinstance(location, Path) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:/(?!/)", text):
        # Path("s3://b/k") is "s3:/b/k": the URL is lost, and "s3:" would become a folder
        raise ValidationError(f"The {role!r} location {text!r} looks like a URL made into a Path, "
                              "which drops one '/' of '://': give URLs as str.")
    if is_url(text):
        return text
    # the workers' working folder is not the client's: send an absolute path
    return str(Path(text).expanduser().absolute())


def input_ref(kind: str, files: dict[str, str | Path | None], **options: Any) -> InputRef:
    """The reference the client sends for ``files`` (role -> path or URL; None: not given).

    A table without a schema gets ``NAME.schema.toml`` beside it (what ``medanon synth table``
    writes), so that the workers read that file too and hash it with the table.
    """
    if kind not in KINDS:
        raise ValidationError(f"The 'kind' parameter of input_ref must be one of "
                              f"{', '.join(KINDS)}; got {kind!r}.")
    unknown = set(files) - set(KINDS[kind])
    if unknown or files.get("input") is None:
        raise ValidationError(f"The 'files' parameter of input_ref must give 'input' and may give "
                              f"{', '.join(KINDS[kind][1:]) or 'nothing else'}; got "
                              f"{', '.join(sorted(files))}.")
    located = {role: _normalised(role, loc) for role, loc in files.items() if loc is not None}
    if kind == "table" and "schema" not in located:
        table = located["input"]
        stem = table.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        located["schema"] = table.rsplit("/", 1)[0] + "/" + stem + ".schema.toml"
    return InputRef(kind, tuple((role, located[role]) for role in KINDS[kind] if role in located),
                    options=tuple(sorted(options.items())))


# -- on a worker ---------------------------------------------------------------------------------
def _worker_name() -> str:
    try:
        from dask.distributed import get_worker

        return f"worker {get_worker().address}"
    except (ImportError, ValueError):  # called outside a worker (tests, a plain script)
        return "this process"


def _scratch() -> str | None:
    try:
        from dask.distributed import get_worker

        return get_worker().local_directory
    except (ImportError, ValueError):
        return None


def _unreadable(role: str, location: str, why: str) -> ValidationError:
    flag = "--input" if role == "input" else f"--{role}"
    hint = ("every worker reads it from that URL: install the URL's fsspec implementation "
            "(s3fs for s3://, gcsfs for gs://, adlfs for az://) and its credentials on the workers"
            if is_url(location) else
            "every worker reads it itself: put it on a filesystem all workers mount at the same "
            "absolute path, or give an object-store URL")
    if role == "schema":
        hint += " (without --schema, the table's NAME.schema.toml beside it)"
    return ValidationError(f"{_worker_name()} cannot read the experiment's {flag} {location!r}: "
                           f"{why}. The input is not sent from the client; {hint}.")


def _copy(source: BinaryIO, target: Path | None) -> str:
    """SHA-256 of a stream, written to ``target`` on the way when given (one pass for both)."""
    digest = hashlib.sha256()
    with open(target, "wb") if target is not None else _nothing() as out:
        while chunk := source.read(_CHUNK):
            digest.update(chunk)
            if out is not None:
                out.write(chunk)
    return digest.hexdigest()


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


def _combined(parts: list[tuple[str, str]]) -> str:
    # a folder's digest covers its files' relative names and contents, not where it is mounted
    return hashlib.sha256("".join(f"{name}\t{d}\n" for name, d in sorted(parts)).encode()).hexdigest()


def _is_store_file(head: bytes) -> bool:
    return head[8:12] == _DUCKDB_MAGIC


def _fetch_local(role: str, location: str, scratch: Path) -> tuple[Path, str]:
    path = Path(location)
    try:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())
            parts = []
            for file in files:
                with open(file, "rb") as handle:
                    parts.append((file.relative_to(path).as_posix(), _copy(handle, None)))
            return path, _combined(parts)
        with open(path, "rb") as handle:
            head = handle.read(16)
            handle.seek(0)
            if _is_store_file(head):
                # read a copy: the workers never hold a lock on the data holder's store
                copy = scratch / path.name
                return copy, _copy(handle, copy)
            return path, _copy(handle, None)
    except FileNotFoundError:
        raise _unreadable(role, location, "no such file or folder on that machine") from None
    except OSError as exc:
        raise _unreadable(role, location, exc.strerror or str(exc)) from None


def _fetch_remote(role: str, location: str, scratch: Path) -> tuple[Path, str]:
    try:
        from fsspec.core import url_to_fs
        from fsspec.implementations.local import LocalFileSystem

        fs, root = url_to_fs(location)
    except (ImportError, ValueError) as exc:  # no implementation for the scheme, a bad URL
        raise _unreadable(role, location, str(exc)) from None
    if isinstance(fs, LocalFileSystem):
        return _fetch_local(role, root, scratch)
    # Remote backends raise their own exception types (botocore, google.auth, aiohttp): any of
    # them means this worker cannot read the input, which is what the message must say.
    try:
        if not fs.exists(root):
            raise _unreadable(role, location, "nothing at that URL as this worker sees it")
        name = root.rstrip("/").rsplit("/", 1)[-1] or role
        if fs.isdir(root):
            parts = []
            for file in sorted(fs.find(root)):
                relative = file[len(root.rstrip("/")) + 1:]
                target = scratch / name / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                with fs.open(file, "rb") as handle:
                    parts.append((relative, _copy(handle, target)))
            return scratch / name, _combined(parts)
        with fs.open(root, "rb") as handle:
            return scratch / name, _copy(handle, scratch / name)
    except MedanonError:
        raise
    except Exception as exc:  # see above
        raise _unreadable(role, location, f"{type(exc).__name__}: {exc}") from None


def _fetch(role: str, location: str, scratch: Path) -> tuple[Path, str]:
    """A local path holding the input, and the SHA-256 of its content."""
    scratch.mkdir()
    if is_url(location):
        return _fetch_remote(role, location, scratch)
    return _fetch_local(role, location, scratch)


def _dataset_from_store(path: Path) -> tuple[Dataset, str]:
    with ReleaseStore.open(path, read_only=True) as store:
        periods = store.periods().set_index("period")
        if periods.empty:
            raise ValidationError("it is a medanon store with no ingested period ('medanon ingest "
                                  "SOURCE --store S' first)")
        quarters = [FaersQuarter(parse_period(p), str(periods.at[p, "era"]),
                                 str(periods.at[p, "source"]), store.records(p),
                                 store.ingest_report(p)) for p in periods.index]
        return Dataset(quarters, store.schema), "medanon store"


def _read(kind: str, paths: dict[str, Path]) -> tuple[Any, dict]:
    if kind == "faers":
        source = paths["input"]
        if source.is_file():
            with open(source, "rb") as handle:
                if _is_store_file(handle.read(16)):
                    dataset, fmt = _dataset_from_store(source)
                    return dataset, {"format": fmt}
        # the papers' filter, as for the synthetic input (experiments.periodic.load_periodic_data)
        return Dataset.from_faers(source, keep_missing=False), {"format": "FAERS extracts"}
    from . import single  # the single-release loaders, with the grids' checks

    if kind == "table":
        return single.load_table_input(paths["input"], paths["schema"], rows=0, seed=0), {}
    return single.load_ehr_input(paths["input"], paths.get("admissions"), patients=0, seed=0), {}


def _load(ref: InputRef, *, check: bool) -> tuple[Any, dict]:
    """The input and how it was got. ``check``: read and hash it even when it is cached (the
    first contact of an experiment: the file may have changed since the last one)."""
    key = (ref.kind, ref.files)
    with _lock:
        if not check and ref.sha256 is not None and (key, ref.sha256) in _cache:
            _cache.move_to_end((key, ref.sha256))
            return _cache[(key, ref.sha256)], {"sha256": ref.sha256, "cached": True, "seconds": 0.0,
                                               "fetch_seconds": 0.0}
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="medanon-input-", dir=_scratch()) as tmp:
            paths, parts = {}, []
            for role, location in ref.files:
                paths[role], digest = _fetch(role, location, Path(tmp) / role)
                parts.append((role, digest))
            # one file: its own SHA-256 (what sha256sum prints); several: one over all of them
            digest = parts[0][1] if len(parts) == 1 else _combined(parts)
            fetched = time.perf_counter() - started
            if ref.sha256 is not None and digest != ref.sha256:
                raise ValidationError(
                    f"{_worker_name()} reads different content at the experiment's --input "
                    f"{ref.location!r} (SHA-256 {digest[:12]}...) than the workers that started "
                    f"the grid ({ref.sha256[:12]}...): every worker must see the same input.")
            cached = (key, digest) in _cache
            if not cached:
                try:
                    loaded, facts = _read(ref.kind, paths)
                except MedanonError as exc:
                    # name the location the user gave, not this worker's scratch copy
                    raise type(exc)(f"{_worker_name()} reading the experiment's --input "
                                    f"{ref.location!r}: {exc}") from None
                _cache[(key, digest)] = (loaded, facts)
                while len(_cache) > CACHE_SIZE:
                    _cache.popitem(last=False)
        _cache.move_to_end((key, digest))
        # fetch: copy or download and hash; the rest: parse and check (none when cached)
        return _cache[(key, digest)], {"sha256": digest, "cached": cached,
                                       "seconds": round(time.perf_counter() - started, 3),
                                       "fetch_seconds": round(fetched, 3)}


def _with_options(ref: InputRef, loaded: Any) -> Any:
    options = dict(ref.options)
    if ref.kind == "ehr" and "split_seed" in options:
        return replace(loaded, split_seed=options["split_seed"])
    return loaded


def resolve(data: Any) -> Any:
    """What a task works on: ``data`` itself, or the input an :class:`InputRef` names, read once
    per worker process and then taken from its cache."""
    if not isinstance(data, InputRef):
        return data
    (loaded, _), _ = _load(data, check=False)
    return _with_options(data, loaded)


def describe(ref: InputRef) -> dict:
    """A worker task: read the input (or find the same content in this process's cache) and say
    what it holds: the content digest, where it was read and how long it took, and for the
    ``faers`` kind the periods, which the client needs to build the grid."""
    (loaded, facts), how = _load(ref, check=True)
    out: dict[str, Any] = {"worker": _worker_name().removeprefix("worker "), **how}
    details: dict[str, Any] = {"synthetic": False, **facts}
    if ref.kind != "faers":  # the loader's own details, without this worker's scratch paths
        details.update({k: v for k, v in loaded.details.items() if k not in KINDS[ref.kind]})
    details["input"] = ref.location
    if len(ref.files) > 1:
        details.update({role: loc for role, loc in ref.files[1:]})
    if ref.kind == "faers":
        out["periods"] = list(loaded.periods)
        details["reports"] = {p: len(loaded.records(p)) for p in loaded.periods}
    elif ref.kind == "table":
        details["rows"] = len(loaded.data)
    else:
        details["patients"] = loaded.data.n_patients
    out["details"] = details
    return out


def cached_inputs() -> list[dict]:
    """What this process holds: kind, files and digest of each cached input (for checks)."""
    with _lock:
        return [{"kind": kind, "files": [list(f) for f in files], "sha256": digest}
                for (kind, files), digest in _cache]


def clear_cache() -> None:
    """Forget every cached input (frees the memory of a long-lived worker)."""
    with _lock:
        _cache.clear()
