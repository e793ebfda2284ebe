"""Publishing outputs: temporary files, no-replace commits, signals and stale leftovers.

Every output is first written to a hidden temporary file next to its final name,
``.<name>.pmlkit-<pid>-<random>.tmp``, and only then *committed*:

* without ``overwrite`` by :func:`os.link` of the finished temporary file to the final
  name, which fails if that name exists (so two runs racing for one output cannot both
  win, and nothing that appeared meanwhile is replaced);
* with ``overwrite`` by :func:`os.replace` (atomic: a reader sees the old or the new file,
  never a mix).

While a :func:`cleanup_on_signals` block runs, SIGTERM and SIGHUP raise ``SystemExit``
(SIGINT already raises ``KeyboardInterrupt``), so the ``finally`` blocks remove the
temporary files. A run killed with SIGKILL cannot clean up: its temporary files carry its
process id, and the next run writing next to them removes those whose process is gone
(:func:`remove_stale`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import hashlib
import json
import os
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError

__all__ = ["MANIFEST_FORMAT", "MANIFEST_SUFFIX", "HashingFile", "Staged", "cleanup_on_signals",
           "commit", "deferred_signals", "discard", "folder_lock", "manifest_path", "os_error",
           "publish_all", "remove_stale", "settle", "temp_path"]

#: The ``"format"`` entry of every manifest pmlkit writes.
MANIFEST_FORMAT = "pmlkit-privatization"
#: The manifest of output ``<name>`` is published as ``<name>.pmlkit.json``.
MANIFEST_SUFFIX = ".pmlkit.json"

_TAG = ".pmlkit-"
#: The suffixes of the temporary names :func:`temp_path` gives.
_SUFFIXES = ("tmp", "tmpdir", "old", "bak")


def previous_path(final: Path, pid: int) -> Path:
    """A free visible name ``<name>.previous-<pid>[-n]`` beside ``final`` for a previous
    output that a run could not put back: no later run removes it (a hidden temporary
    name is cleared as a killed run's leftover).

    Examples
    --------
    >>> previous_path(Path("/nonexistent/out.csv"), 42).name
    'out.csv.previous-42'
    """
    keep = final.with_name(f"{final.name}.previous-{pid}")
    n = 1
    while keep.exists() or keep.is_symlink():
        n += 1
        keep = final.with_name(f"{final.name}.previous-{pid}-{n}")
    return keep


def temp_path(final: Path, suffix: str = ".tmp") -> Path:
    """A fresh hidden temporary name in ``final``'s folder, tagged with this process id.

    Examples
    --------
    >>> from pathlib import Path
    >>> t = temp_path(Path("out/data.csv"))
    >>> t.parent == Path("out"), t.name.startswith(".data.csv.pmlkit-"), t.suffix
    (True, True, '.tmp')
    """
    return final.parent / f".{final.name}{_TAG}{os.getpid()}-{secrets.token_hex(6)}{suffix}"


class HashingFile:
    """A new binary file that computes the SHA-256 and size of what is written to it,
    as it is written (the output is not read back to be hashed).

    The file is created exclusively (an existing name is an error). :meth:`finish`
    flushes, fsyncs and closes it and returns ``(sha256 hex digest, size)``. Everything
    happens on the caller's thread.

    Examples
    --------
    >>> import hashlib, tempfile
    >>> from pathlib import Path
    >>> workdir = tempfile.TemporaryDirectory()
    >>> f = HashingFile(Path(workdir.name) / "out.bin")
    >>> f.write(b"abc"), f.write(memoryview(b"de")), f.tell()
    (3, 2, 5)
    >>> f.finish() == (hashlib.sha256(b"abcde").hexdigest(), 5)
    True
    >>> workdir.cleanup()
    """

    mode = "wb"

    def __init__(self, path: Path) -> None:
        self.name = str(path)
        self._fh = open(path, "xb")
        self._hash = hashlib.sha256()
        self.size = 0

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._hash.update(view)
        self._fh.write(view)
        self.size += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        if not self._fh.closed:
            self._fh.flush()

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        """Flush, fsync and close (a writer closing its sink closes this file too)."""
        if self._fh.closed:
            return
        try:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        finally:
            self._fh.close()

    def finish(self) -> tuple[str, int]:
        """Close the file (see :meth:`close`); its SHA-256 (hex) and size in bytes."""
        self.close()
        return self._hash.hexdigest(), self.size


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except OSError as exc:  # (PermissionError: it exists but belongs to someone else)
        return not isinstance(exc, ProcessLookupError)
    return True


def remove_stale(final: Path) -> list[Path]:
    """Remove temporary files (or folders) left next to ``final`` by runs that were killed
    (their process no longer exists). Returns what was removed. A killed run's backup of a
    previous output (``.old``, ``.bak``) is not removed but renamed
    ``<name>.previous-<pid>``: it may be the previous output's only copy.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> workdir = tempfile.TemporaryDirectory()
    >>> folder = Path(workdir.name)
    >>> remove_stale(folder / "out.csv")  # nothing left by a killed run
    []
    >>> workdir.cleanup()
    """
    removed: list[Path] = []
    prefix = f".{final.name}{_TAG}"
    try:
        entries = list(final.parent.iterdir())
    except OSError:
        return removed
    for p in entries:
        if not p.name.startswith(prefix):
            continue
        rest = p.name[len(prefix):]
        pid_text, _, tail = rest.partition("-")
        token, dot, suffix = tail.partition(".")
        # only a name temp_path gives (<pid>-<hex>.<suffix>): never a user's own file
        # that merely starts like one
        if not pid_text.isdigit() or not dot or suffix not in _SUFFIXES \
                or not token or token.strip("0123456789abcdef") or _alive(int(pid_text)):
            continue
        if p.name.endswith((".old", ".bak")):
            # a previous output a killed --overwrite moved aside (Dask, ".old") or kept as
            # its backup (local, ".bak"): possibly its only copy, never deleted; kept under
            # a visible name, as a failed run that cannot put it back keeps it
            with contextlib.suppress(OSError):
                os.rename(p, previous_path(final, int(pid_text)))
            continue
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            removed.append(p)
        except OSError:
            pass
    return removed


def os_error(exc: OSError, what: str, path: Path | str) -> DataError:
    """One clear line for a file-system error (permissions, disk full, ...).

    Examples
    --------
    >>> import errno
    >>> err = os_error(OSError(errno.ENOSPC, "No space left on device"), "write the output",
    ...                "out.csv")
    >>> type(err).__name__, "out.csv" in str(err)
    ('DataError', True)
    """
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        reason = f"permission denied ({exc.strerror})"
    return DataError(f"cannot {what} {str(path)!r}: {reason}; nothing was written there")


def commit(tmp: Path, final: Path, *, overwrite: bool) -> None:
    """Publish the finished temporary file ``tmp`` under ``final`` (see the module docs).

    Raises DataError if ``final`` exists and ``overwrite`` is False (``tmp`` is kept for the
    caller to remove).

    Examples
    --------
    Without ``overwrite`` an existing output is never replaced:

    >>> import tempfile
    >>> from pathlib import Path
    >>> workdir = tempfile.TemporaryDirectory()
    >>> folder = Path(workdir.name)
    >>> tmp = temp_path(folder / "out.txt")
    >>> _ = tmp.write_text("first")
    >>> commit(tmp, folder / "out.txt", overwrite=False)
    >>> tmp2 = temp_path(folder / "out.txt")
    >>> _ = tmp2.write_text("second")
    >>> commit(tmp2, folder / "out.txt", overwrite=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: output file '...out.txt' already exists ...
    >>> (folder / "out.txt").read_text()
    'first'
    >>> workdir.cleanup()
    """
    if overwrite:
        if final.is_dir():
            raise DataError(f"output {str(final)!r} is a folder; pmlkit replaces files only")
        os.replace(tmp, final)
        return
    try:
        os.link(tmp, final)
    except FileExistsError:
        raise DataError(f"output file {str(final)!r} already exists (another run may have "
                        "written it meanwhile); pass overwrite=True (--overwrite) to replace "
                        "it") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                             errno.EMLINK):
            raise
        # a file system without hard links: claim the name exclusively, then replace it
        try:
            fd = os.open(final, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            raise DataError(f"output file {str(final)!r} already exists; pass "
                            "overwrite=True (--overwrite) to replace it") from None
        os.close(fd)
        os.replace(tmp, final)
        return
    tmp.unlink(missing_ok=True)


def same_inode(a: Path, st: os.stat_result) -> bool:
    try:
        s = os.stat(a)
    except OSError:
        return False
    return (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino)


@contextlib.contextmanager
def folder_lock(folders: list[Path]) -> Iterator[None]:
    """Hold an advisory exclusive lock (:func:`fcntl.flock`) on each folder while outputs
    are published into it, so two runs never interleave publishing data and manifests
    (a reader would otherwise find one run's data with the other's manifest). No lock
    file is created; without ``fcntl`` (Windows) this does nothing.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as folder, folder_lock([Path(folder)]):
    ...     pass  # publish here
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        yield
        return
    fds = []
    try:
        for folder in sorted({os.path.abspath(f) for f in folders}):
            fd = os.open(folder, os.O_RDONLY)
            fds.append(fd)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        for fd in fds:
            os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def cleanup_on_signals() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into ``SystemExit(128 + signal)`` for the block's duration (main
    thread only), so that temporary files are removed by the ``finally`` blocks.

    Examples
    --------
    >>> with cleanup_on_signals():
    ...     pass  # write temporary files here; SIGTERM now runs the finally blocks
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    saved = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            saved[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # pragma: no cover - not settable here
            pass
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)


_DEFERRED = ("SIGINT", "SIGTERM", "SIGHUP")


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP while the block runs (a clean-up that must
    not stop half way: removing temporary files, joining threads), then deliver the first
    one that arrived meanwhile, to the handler that was in place, once the block is done.

    Python runs signal handlers in the main thread between any two bytecodes, so a second
    Ctrl-C pressed during a clean-up would otherwise interrupt the clean-up itself. Outside
    the main thread (where handlers cannot be changed, and never run) this does nothing.

    Examples
    --------
    >>> import signal
    >>> caught = []
    >>> try:
    ...     with deferred_signals():
    ...         signal.raise_signal(signal.SIGINT)  # held back ...
    ...         caught.append("block finished")
    ... except KeyboardInterrupt:
    ...     caught.append("then delivered")
    >>> caught
    ['block finished', 'then delivered']
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def hold(signum: int, frame: object) -> None:
        arrived.append(signum)

    saved: dict[int, Any] = {}
    try:
        for name in _DEFERRED:
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) is not None:
                with contextlib.suppress(ValueError, OSError, TypeError):
                    saved[sig] = signal.signal(sig, hold)
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)
        if arrived:
            signal.raise_signal(arrived[0])


def settle(steps: Sequence[Callable[[], object]], *, reraise: bool = True) -> None:
    """Run every clean-up step (removing a temporary file, closing a writer), in order,
    whatever happens: a step's error is ignored, and a signal arriving meanwhile (a second
    Ctrl-C, a SIGTERM) is held back until the last step ran, then raised (with
    ``reraise=False`` dropped: the caller raises its own first error). A step that
    raises KeyboardInterrupt or SystemExit itself (polars passes Ctrl-C on that way), or a
    signal that lands before the holding back takes effect, makes the step run again (the
    steps may run twice), at most 100 times in all."""
    done = 0
    pending: BaseException | None = None
    for _ in range(100):
        try:
            with deferred_signals():
                while done < len(steps):
                    try:
                        steps[done]()
                    except Exception:
                        pass
                    done += 1
            break
        except (KeyboardInterrupt, SystemExit) as exc:
            pending = pending or exc
    if pending is not None and reraise:
        raise pending


def discard(hashed: Any, tmp: Path, *closers: Any) -> None:
    """After a failed write: close the writers ``closers`` (callables), then the hashing
    file, and remove the temporary output (see :func:`settle`). Their own errors are
    ignored, and so is an interrupt they raise or a signal arriving meanwhile (a second
    Ctrl-C): the clean-up is not stopped half way, and the first error is the one the
    caller raises."""
    steps: list[Callable[[], object]] = [*closers]
    if hashed is not None:
        steps.append(hashed.close)
    steps.append(functools.partial(tmp.unlink, missing_ok=True))
    settle(steps, reraise=False)


@dataclass
class Staged:
    """A finished temporary output waiting to be published."""

    tmp: Path
    out: Path
    rows: int
    sha256: str
    size: int
    manifest_doc: dict[str, Any] = dataclasses.field(default_factory=dict)
    engine: str = "pyarrow"
    #: the binding of the release record: digests of the privatised columns' content
    content: dict[str, Any] | None = None


def manifest_path(out: Path) -> Path:
    """Where the manifest of output ``out`` is published: ``<out>.pmlkit.json``."""
    return out.with_name(out.name + MANIFEST_SUFFIX)


def publish_all(staged: list[Staged], *, overwrite: bool, manifest: bool) -> None:
    """Publish every staged output and its manifest, or none of them."""
    with folder_lock([st.out.parent for st in staged]):
        _publish_locked(staged, overwrite=overwrite, manifest=manifest)


def _publish_locked(staged: list[Staged], *, overwrite: bool, manifest: bool) -> None:
    # each file is listed before its commit (a signal just after the commit still undoes
    # it); the undoing removes only a name that holds this run's file, and puts back the
    # file an --overwrite replaced (kept under a hidden hard link until the end), so a run
    # that fails leaves every output as it found it
    published: list[tuple[Path, os.stat_result]] = []
    backups: dict[Path, Path] = {}

    def keep_old(final: Path) -> None:
        """A hidden hard link to what the name ``final`` holds (a file, or a symbolic link
        itself, not its target), before it is replaced."""
        if not overwrite or final in backups or not (final.is_file() or final.is_symlink()):
            return
        bak = temp_path(final, ".bak")
        try:
            os.link(final, bak, follow_symlinks=False)
        except (OSError, NotImplementedError):  # no hard links here: cannot be put back
            return
        backups[final] = bak

    try:
        for st in staged:
            info = os.stat(st.tmp)
            keep_old(st.out)
            published.append((st.out, info))
            try:
                commit(st.tmp, st.out, overwrite=overwrite)
            except OSError as exc:
                raise os_error(exc, "write the output", st.out) from exc
            if not manifest:
                continue
            man = manifest_path(st.out)
            mtmp = temp_path(man)
            try:
                mtmp.write_text(json.dumps(st.manifest_doc, indent=2) + "\n", encoding="utf-8")
                keep_old(man)
                published.append((man, os.stat(mtmp)))
                commit(mtmp, man, overwrite=overwrite)
            except OSError as exc:
                raise os_error(exc, "write the manifest", man) from exc
            finally:
                settle([functools.partial(mtmp.unlink, missing_ok=True)])
            if not same_inode(st.out, info):  # another --overwrite run replaced the data
                raise DataError(f"output {str(st.out)!r} was replaced by another run while "
                                "this one was publishing it; run again")
    except BaseException as exc:
        removed: list[str] = []

        def undo(path: Path, info: os.stat_result) -> None:
            if same_inode(path, info):  # only what this run published
                bak = backups.pop(path, None)
                if bak is not None:
                    os.replace(bak, path)  # the file this run replaced, back in place
                else:
                    path.unlink(missing_ok=True)
                removed.append(str(path))

        settle([functools.partial(undo, path, info) for path, info in reversed(published)])
        settle([functools.partial(b.unlink, missing_ok=True) for b in backups.values()])
        if isinstance(exc, DataError) and removed and len(staged) > 1:
            raise DataError(f"{exc}; none of the {len(staged)} outputs was published "
                            "(those already written were removed)") from exc
        raise
    settle([functools.partial(b.unlink, missing_ok=True) for b in backups.values()])
