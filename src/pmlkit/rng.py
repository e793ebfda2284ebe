"""The randomness policy: cryptographically secure by default, seeded only on request.

Every sampling step of pmlkit that protects people (privatising records, adding noise to
data) obtains its randomness through :func:`resolve_rng`:

* ``rng=None`` (the default): a numpy :class:`~numpy.random.Generator` driven by
  :class:`randomgen.AESCounter` (AES-128 in counter mode, using the CPU's AES-NI
  instructions when present), keyed with 256 bits read from the operating system
  (:func:`os.urandom`, the kernel CSPRNG) and reduced to a 128-bit AES key with
  HMAC-SHA256.
* ``rng=<int>``: numpy's PCG64 seeded with that integer. Reproducible, for research only:
  PCG64 is a statistical generator, not a cryptographic one; the result records it
  (:attr:`RandomSource.seeded` is ``True`` and the description says so).
* ``rng=<numpy.random.Generator>``: used as is (the caller vouches for it); recorded as
  seeded, since pmlkit cannot tell where its state came from.

Why this choice
---------------
*Why not* :mod:`secrets` *alone?* ``secrets``/``os.urandom`` are secure but slow to turn
into numbers: ``secrets.randbits`` per value gives ~1 million uniforms/s; bulk
``os.urandom`` bytes converted with numpy ~30 million/s; and neither gives numpy's
vectorised distributions (``random``, ``integers``, ``laplace``, ``normal``). Measured on
this project's machine (2 cores, quiet), ``Generator(AESCounter).random`` produces ~150
million uniforms/s, so the kernel CSPRNG is used only for the 256-bit key.

*Why not PCG64 for people's data?* PCG64 (numpy's default) is fast and statistically
excellent but *predictable*: its whole 128-bit state can be recovered from a modest run of
outputs, and a 64-bit seed can be brute-forced. An adversary who learns the generator
state can invert a randomised-response mechanism record by record (knowing the uniform
used for a record reveals which row it was drawn from), destroying the PML guarantee,
which assumes the mechanism's randomness is secret. AES in counter mode is a
pseudo-random function under the standard AES assumption: outputs reveal nothing usable
about the key or about other outputs.

*Why AESCounter over ChaCha?* Both are cryptographic (ChaCha20 is used by the Linux
kernel's CSPRNG); on machines with AES-NI, AESCounter is the faster of the two
(measured on this project's machine under load: ~48M vs ~34M uniforms/s). pmlkit uses the
key directly (not randomgen's 64-bit ``seed`` path), so the key carries the full 128 bits
of OS entropy.

Caveats: randomgen implements the AES-CTR construction but is not an audited
cryptographic library, and the key and state live in the process's memory (and travel to
Dask workers inside their task). Whoever needs a certified DRBG (e.g. NIST SP 800-90A)
can pass their own ``numpy.random.Generator`` (it is then recorded as caller-supplied).

Foot-guns closed
----------------
* **fork.** A secure source alive when the process forks would give every child the same
  key, hence identical noise. pmlkit registers an :func:`os.register_at_fork` hook that
  re-keys every live secure :class:`RandomSource` in the child from :func:`os.urandom`
  (in place, so a generator taken from it before the fork is re-keyed too). Bare
  generators from :func:`secure_generator` cannot be tracked: give each process its own.
* **pickle / copy.** Unpickling (or deep-copying) a secure source never replays its
  stream: the copy is re-keyed from :func:`os.urandom` (its description says so). The one
  exception is internal: a child stream marked for one task (the Dask engine ships one
  child per partition, and a recomputed partition must replay its own noise rather than
  release a second, independent privatisation of the same records).
* **labels.** ``seeded=False`` (secure) is reserved for streams pmlkit keys itself: building
  a ``RandomSource(generator, seeded=False, ...)`` by hand raises
  :class:`~pmlkit.errors.ValidationError`; a caller's generator is always recorded as
  seeded.
* **seeds in records.** A seeded source's description never contains the seed (a manifest
  beside the output that names the seed lets anyone undo the privatisation). It holds a
  commitment ``SHA-256("pmlkit-seed/" || salt || decimal seed)`` with a random 16-byte salt
  that is only available in memory (:attr:`RandomSource.seed_salt`, printed on stderr by
  ``pmlkit privatize --seed``): whoever keeps the salt apart from the data can later prove
  which seed was used (:func:`seed_commitment`), nobody else can brute-force it.

Child streams
-------------
:meth:`RandomSource.spawn` gives independent streams (for example one per Dask partition
or per chunk processed in parallel). For the secure generator each child key is derived
with HMAC-SHA256 from the parent's 256-bit key material and a counter that never repeats
for that parent (a standard PRF-based key derivation, like HKDF-expand); for seeded PCG64
it uses :meth:`numpy.random.SeedSequence.spawn`, numpy's own scheme for independent
streams. A parent never hands out the same child twice.
"""

from __future__ import annotations

import hashlib
import hmac
import numbers
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from ._validation import fmt
from .errors import ValidationError

__all__ = ["RNGLike", "RandomSource", "resolve_rng", "secure_generator", "seed_commitment"]

#: Bytes of OS entropy behind every secure root stream.
KEY_MATERIAL_BYTES = 32


def _aes_generator(material: bytes) -> np.random.Generator:
    """A numpy Generator over AESCounter keyed by HMAC-SHA256(material, "aes-key")[:16]."""
    import randomgen

    bit_gen = randomgen.AESCounter(key=_aes_key(material), counter=0)
    return np.random.Generator(bit_gen)


def _aes_key(material: bytes) -> int:
    return int.from_bytes(hmac.new(material, b"pmlkit/aes-key", hashlib.sha256).digest()[:16],
                          "little")


def seed_commitment(seed: int | np.integer[Any], salt: bytes | str) -> str:
    """``SHA-256("pmlkit-seed/" || salt || decimal seed)`` as hex: the record a seeded
    source keeps instead of its seed (``salt`` as bytes or hex).

    Examples
    --------
    Whoever kept the salt can show which seed was used; the commitment is a plain SHA-256:

    >>> salt = bytes(16)
    >>> c = seed_commitment(42, salt)
    >>> c == hashlib.sha256(b"pmlkit-seed/" + salt + b"42").hexdigest()
    True
    >>> seed_commitment(42, salt.hex()) == c  # the salt may also be given as hex
    True
    """
    if isinstance(seed, bool | np.bool_) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValidationError(f"seed must be an integer >= 0, got {fmt(seed)}")
    if isinstance(salt, str):
        try:
            salt = bytes.fromhex(salt)
        except ValueError:
            raise ValidationError(f"salt must be bytes or a hex string, got {salt!r}") from None
    if not isinstance(salt, bytes):
        raise ValidationError(f"salt must be bytes or a hex string, got {fmt(salt)}")
    return hashlib.sha256(b"pmlkit-seed/" + salt + str(int(seed)).encode()).hexdigest()


#: live secure sources, re-keyed in a forked child (see "Foot-guns closed")
_LIVE: weakref.WeakSet[RandomSource] = weakref.WeakSet()


def _rekey_after_fork() -> None:
    for src in list(_LIVE):
        src._rekey()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rekey_after_fork)


def _word_stepped() -> tuple[type, ...]:
    """The bit generators whose ``advance(k)`` moves exactly ``k`` words of
    ``random_raw``: PCG64 (one state step per word) and randomgen's AESCounter (a counter
    of 128-bit blocks and a word offset into its buffer). Counter generators such as
    numpy's Philox advance by blocks of words and buffer them, so they are not used."""
    kinds: tuple[type, ...] = (np.random.PCG64, np.random.PCG64DXSM)
    try:
        import randomgen
    except ImportError:  # pragma: no cover (a dependency)
        return kinds
    return (*kinds, randomgen.AESCounter)


def positioned(generator: np.random.Generator, offset: int) -> np.random.Generator | None:
    """A copy of ``generator`` positioned ``offset`` 64-bit words further into its stream
    (the words ``random_raw`` would give after ``offset`` words), leaving ``generator``
    where it is; None when its bit generator cannot be moved word by word.

    Work split into pieces that run on several threads (the chunks of a privatisation)
    draws the piece starting at record ``offset`` from ``positioned(generator, offset)``:
    every word is used once, by the record that a single pass would give it to. The copy
    lives in this process only, like the stream it is taken from.

    Examples
    --------
    >>> g = resolve_rng(None).generator
    >>> ahead = positioned(g, 3).bit_generator.random_raw(2)
    >>> bool((g.bit_generator.random_raw(5)[3:] == ahead).all())
    True
    >>> positioned(np.random.Generator(np.random.Philox(1)), 3) is None
    True
    """
    bitgen = generator.bit_generator
    kind = type(bitgen)
    if kind not in _word_stepped():
        return None
    copy: Any = kind()
    copy.state = bitgen.state
    if offset:
        copy.advance(int(offset))
    return np.random.Generator(copy)


def can_position(generator: np.random.Generator) -> bool:
    """Whether :func:`positioned` can move ``generator``'s bit generator word by word
    (PCG64, PCG64DXSM, AESCounter).

    Examples
    --------
    >>> can_position(resolve_rng(None).generator), can_position(np.random.default_rng(1))
    (True, True)
    >>> can_position(np.random.Generator(np.random.Philox(1)))
    False
    """
    return type(generator.bit_generator) in _word_stepped()


def skip_words(generator: np.random.Generator, n: int) -> bool:
    """Move ``generator`` ``n`` words on: it then gives what it gives after
    ``random_raw(n)`` (a buffered 32-bit half, which ``random_raw`` leaves alone, is
    kept; an AESCounter's state may hold the same stream buffered differently); False
    (not moved) when its bit generator cannot be moved word by word.

    Examples
    --------
    >>> g, h = resolve_rng(3).generator, resolve_rng(3).generator
    >>> _ = g.integers(0, 2**32, dtype=np.uint32)  # a 32-bit half buffered
    >>> _ = h.integers(0, 2**32, dtype=np.uint32)
    >>> _ = g.bit_generator.random_raw(7)
    >>> skip_words(h, 7) and g.bit_generator.state == h.bit_generator.state
    True
    >>> int(g.integers(0, 2**32, dtype=np.uint32)) == int(h.integers(0, 2**32, dtype=np.uint32))
    True
    """
    moved = positioned(generator, n)
    if moved is None:
        return False
    bitgen = generator.bit_generator
    state = dict(moved.bit_generator.state)
    before = bitgen.state
    state["has_uint32"], state["uinteger"] = before["has_uint32"], before["uinteger"]
    bitgen.state = state
    return True


def secure_generator() -> np.random.Generator:
    """A fresh cryptographically secure numpy Generator keyed from :func:`os.urandom`.

    Shortcut for ``resolve_rng(None).generator``.

    Examples
    --------
    >>> g = secure_generator()
    >>> type(g.bit_generator).__name__
    'AESCounter'
    >>> bool(0.0 <= g.random() < 1.0)
    True
    """
    return _aes_generator(os.urandom(KEY_MATERIAL_BYTES))


@dataclass
class _SpawnCounter:
    """Mutable count of children handed out (so a parent never reuses a child index)."""

    n: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __getstate__(self) -> dict[str, int]:  # picklable (Dask ships streams to workers)
        return {"n": self.n}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.n = state["n"]
        self.lock = threading.Lock()

    def take(self, k: int) -> range:
        with self.lock:
            start = self.n
            self.n += k
        return range(start, start + k)


@dataclass(frozen=True, eq=False)
class RandomSource:
    """A random stream and how it was made.

    Attributes
    ----------
    generator
        The numpy :class:`~numpy.random.Generator` to draw from.
    seeded
        ``True`` when the stream is reproducible (an int seed or a caller's generator):
        suitable for research, not for protecting people. ``False`` for the secure default.
    description
        Human-readable record, e.g. ``"AESCounter keyed from os.urandom (secure)"`` or
        ``"PCG64 seed=42 (seeded: research reproducibility only, not for protecting
        people)"``. Privatisation reports and file manifests store it.

    Examples
    --------
    Build one with :func:`resolve_rng`; a seeded source says so and never records its seed:

    >>> src = resolve_rng(42)
    >>> src.seeded
    True
    >>> "seed withheld" in src.description
    True
    >>> [child.seeded for child in src.spawn(2)]  # independent child streams
    [True, True]
    >>> sorted(src.to_dict())
    ['description', 'seeded']
    """

    generator: np.random.Generator
    seeded: bool
    description: str
    _material: bytes | None = field(default=None, repr=False)
    _seed_seq: np.random.SeedSequence | None = field(default=None, repr=False)
    _counter: _SpawnCounter = field(default_factory=_SpawnCounter, repr=False)
    _seed_salt: bytes | None = field(default=None, repr=False)
    _task: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.generator, np.random.Generator):
            raise ValidationError(
                f"generator must be a numpy.random.Generator, got {fmt(self.generator)}")
        if not isinstance(self.seeded, bool):
            raise ValidationError(f"seeded must be True or False, got {fmt(self.seeded)}")
        if not self.seeded:
            import randomgen

            if self._material is None or not isinstance(self.generator.bit_generator,
                                                         randomgen.AESCounter):
                raise ValidationError(
                    "seeded must be True for a RandomSource built around a caller's generator "
                    "(got seeded=False): only streams pmlkit keys itself from os.urandom are "
                    "labelled secure; use resolve_rng(None) for one")
            _LIVE.add(self)

    @property
    def seed_salt(self) -> str | None:
        """Hex salt of the seed commitment in :attr:`description` (int-seeded sources only;
        kept in memory, never written by pmlkit into an output folder)."""
        return None if self._seed_salt is None else self._seed_salt.hex()

    def _rekey(self) -> None:
        """Fresh key material from os.urandom, installed in place (fork hook, unpickling)."""
        import randomgen

        material = os.urandom(KEY_MATERIAL_BYTES)
        self.generator.bit_generator.state = randomgen.AESCounter(
            key=_aes_key(material), counter=0).state
        object.__setattr__(self, "_material", material)
        object.__setattr__(self, "_counter", _SpawnCounter())

    def __reduce__(self) -> Any:
        if self._material is not None and not self._task:
            # never replay a secure stream in a copy: the copy gets its own key
            return (_fresh_secure, (f"{self.description} (re-keyed on copy)",))
        return super().__reduce__()

    def __deepcopy__(self, memo: dict[int, Any]) -> RandomSource:
        import copy

        if self._material is not None and not self._task:
            return _fresh_secure(f"{self.description} (re-keyed on copy)")
        return RandomSource(copy.deepcopy(self.generator, memo), self.seeded, self.description,
                            _material=self._material, _seed_seq=self._seed_seq,
                            _seed_salt=self._seed_salt, _task=self._task)

    def for_task(self) -> RandomSource:
        """This stream, marked to be shipped to exactly one task (Dask partitions): its
        pickles and copies keep the key so a recomputed task replays the same noise."""
        return RandomSource(self.generator, self.seeded, self.description,
                            _material=self._material, _seed_seq=self._seed_seq,
                            _seed_salt=self._seed_salt, _task=True)

    def spawn(self, k: int) -> list[RandomSource]:
        """``k`` independent child streams, never handed out before by this parent.

        Secure: child ``i`` has key material ``HMAC-SHA256(material, "child" || i)`` (i a
        64-bit counter unique to this parent). Seeded: ``SeedSequence.spawn(k)`` children
        of the seed's sequence, each driving a PCG64. A caller's generator: its own
        :meth:`numpy.random.Generator.spawn` when it supports it, else PCG64 children of a
        SeedSequence built from 256 bits drawn from it.
        """
        if isinstance(k, bool | np.bool_) or not isinstance(k, numbers.Integral) or k < 0:
            raise ValidationError(f"k must be an integer >= 0, got {fmt(k)}")
        k = int(k)
        if self._material is not None:
            out = []
            for i in self._counter.take(k):
                child = hmac.new(self._material, b"pmlkit/child/" + i.to_bytes(8, "big"),
                                 hashlib.sha256).digest()
                out.append(RandomSource(_aes_generator(child), False,
                                        f"{_SECURE_DESC} (child stream)", _material=child))
            return out
        if self._seed_seq is not None:
            return [RandomSource(np.random.Generator(np.random.PCG64(ss)), True,
                                 f"{self.description} (child stream)", _seed_seq=ss)
                    for ss in self._seed_seq.spawn(k)]
        try:
            gens = self.generator.spawn(k)
        except (TypeError, ValueError, AttributeError):
            entropy = [int(x) for x in self.generator.integers(0, 2**63, size=4,
                                                                dtype=np.int64)]
            root = np.random.SeedSequence(entropy)
            return [RandomSource(np.random.Generator(np.random.PCG64(ss)), True,
                                 f"{self.description} (child stream)", _seed_seq=ss)
                    for ss in root.spawn(k)]
        return [RandomSource(g, True, f"{self.description} (child stream)") for g in gens]

    def generator_at(self, offset: int) -> np.random.Generator | None:
        """A generator positioned ``offset`` 64-bit words into this seeded stream, leaving
        this stream where it is; ``None`` for the secure default (whose streams are never
        replayed) and for a caller's generator other than PCG64 (which jumps ahead word by
        word).

        Work split into pieces that may run in any order (the batches of a polars lazy
        frame) draws the piece starting at record ``offset`` from ``generator_at(offset)``:
        a record consuming one word, the release is that of one pass over the whole data,
        whatever the pieces and their order.

        Examples
        --------
        >>> src = resolve_rng(7)
        >>> words = src.generator_at(0).bit_generator.random_raw(5)
        >>> bool((src.generator_at(3).bit_generator.random_raw(2) == words[3:]).all())
        True
        >>> resolve_rng(None).generator_at(3) is None
        True
        """
        if isinstance(offset, bool | np.bool_) or not isinstance(offset, numbers.Integral) \
                or offset < 0:
            raise ValidationError(f"offset must be an integer >= 0, got {fmt(offset)}")
        if not self.seeded:
            return None
        # (PCG64 only: a caller's AESCounter generator, which positioned() also moves,
        # keeps the lazy frames' per-batch streams it always had)
        if type(self.generator.bit_generator) not in (np.random.PCG64,
                                                      np.random.PCG64DXSM):
            return None
        return positioned(self.generator, offset)

    def to_dict(self) -> dict[str, Any]:
        """``{"seeded": ..., "description": ...}`` (never the key, never the seed)."""
        return {"seeded": self.seeded, "description": self.description}


def _fresh_secure(description: str) -> RandomSource:
    material = os.urandom(KEY_MATERIAL_BYTES)
    return RandomSource(_aes_generator(material), False, description, _material=material)


_SECURE_DESC = "AESCounter keyed from os.urandom (secure)"
_SEEDED_NOTE = "seeded: research reproducibility only, not for protecting people"


#: What an ``rng=`` argument may be (see :func:`resolve_rng`).
RNGLike: TypeAlias = int | np.integer[Any] | np.random.Generator | RandomSource | None


def resolve_rng(rng: RNGLike = None) -> RandomSource:
    """Turn the ``rng=`` argument of pmlkit's samplers into a :class:`RandomSource`.

    Parameters
    ----------
    rng
        ``None``: a cryptographically secure AESCounter generator keyed with 256 bits from
        :func:`os.urandom` (see the module docstring for the reasons). An ``int`` (Python
        or numpy, ``>= 0``): numpy PCG64 seeded with it, recorded as seeded (research
        only) with a salted commitment to the seed, never the seed itself. A
        :class:`numpy.random.Generator`: used as is, recorded as seeded. A
        :class:`RandomSource`: returned unchanged.

    Raises
    ------
    ValidationError
        For anything else (floats, bools, negative seeds, legacy ``RandomState``).

    Examples
    --------
    The default is the secure generator; an integer seed gives numpy's PCG64 stream for
    that seed (the same numbers as ``numpy.random.default_rng(seed)``), labelled seeded:

    >>> resolve_rng(None).seeded
    False
    >>> src = resolve_rng(7)
    >>> src.seeded, src.generator.random() == np.random.default_rng(7).random()
    (True, True)
    >>> resolve_rng(0.5)
    Traceback (most recent call last):
    ...
    pmlkit.errors.ValidationError: rng must be None (secure default), ... got 0.5 of type float
    """
    if rng is None:
        material = os.urandom(KEY_MATERIAL_BYTES)
        return RandomSource(_aes_generator(material), False, _SECURE_DESC, _material=material)
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, np.random.Generator):
        name = type(rng.bit_generator).__name__
        return RandomSource(rng, True, f"caller-supplied numpy Generator ({name}); "
                            f"treated as {_SEEDED_NOTE}")
    if isinstance(rng, bool | np.bool_) or not isinstance(rng, numbers.Integral):
        raise ValidationError(
            "rng must be None (secure default), an integer seed >= 0 or a "
            f"numpy.random.Generator, got {fmt(rng)} of type {type(rng).__name__}")
    seed = int(rng)
    if seed < 0:
        raise ValidationError(f"rng seed must be an integer >= 0, got {seed}")
    ss = np.random.SeedSequence(seed)
    salt = os.urandom(16)
    return RandomSource(np.random.Generator(np.random.PCG64(ss)), True,
                        f"PCG64 seeded; seed withheld, commitment sha256:"
                        f"{seed_commitment(seed, salt)} ({_SEEDED_NOTE})",
                        _seed_seq=ss, _seed_salt=salt)
