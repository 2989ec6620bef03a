"""jieba's dictionary as data: the words a short text can use, without building the whole dictionary.

rjieba builds jieba's whole dictionary (349,046 words) when it is first imported: about 0.1 s, in every
process that cuts a CJK run. A process that cuts a little text (``yiji recall`` with a Chinese question,
a hook that reads one prompt) needs only the dictionary's words that occur in that text.

**Why the cut is the same.** jieba cuts a run by the most probable route through the dictionary words
found in it: each word of a route weighs ``log(frequency) - log(total)``, where ``total`` is the sum of
every frequency of the dictionary; search mode adds the two- and three-character dictionary words inside
each longer word; runs of single characters that are no word go to its HMM, whose model is built in. A
word that does not occur in the run takes part in none of these, so a dictionary of the words that occur
in it, with the same ``total``, gives the same words at the same places (``tests/test_jieba_words.py``
holds the two cuts equal on real Chinese text and on random strings of the dictionary's characters). The
total is made up by one more word of private-use characters, which never occur in a CJK run.

The words come from ``data/jieba-words.bin``, built by ``scripts/jieba_words.py`` from jieba's
``dict.txt`` (MIT licence, the dictionary rjieba embeds): the words made of CJK characters only, grouped
by their first character, each group compressed on its own, so a text reads the groups of its own
characters (a few hundred words for a question) and nothing else.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable
from functools import cache
from importlib import machinery, util
from types import ModuleType
from typing import Any

__all__ = ["PAD", "RJIEBA_VERSIONS", "Dictionary", "cutter", "dictionary", "native", "usable"]

PAD = "\ue000\ue001"
"""The word that makes up the dictionary's total frequency: private-use characters, never in a CJK run."""

RJIEBA_VERSIONS = frozenset({"0.2.2"})
"""The rjieba releases whose built-in dictionary the data file holds (``tests/test_jieba_words.py``
compares the two cuts on the installed one): with any other, :func:`usable` says no, and rjieba's own
dictionary cuts."""

_MAGIC = b"YJW2"
_HEAD = struct.Struct("<4sQII")


class Dictionary:
    """The words of jieba's dictionary, read group by group from the file's ``data``."""

    def __init__(self, data: bytes) -> None:
        magic, self.total, groups, _longest = _HEAD.unpack_from(data)
        if magic != _MAGIC:
            raise ValueError("not a jieba words file")
        at = _HEAD.size
        firsts = struct.unpack_from(f"<{groups}I", data, at)
        offsets = struct.unpack_from(f"<{groups + 1}I", data, at + 4 * groups)
        base = at + 4 * groups + 4 * (groups + 1)
        self._data = data
        self._where = {first: (base + offsets[i], base + offsets[i + 1]) for i, first in enumerate(firsts)}
        self._groups: dict[str, tuple[dict[str, int], int]] = {}

    @property
    def firsts(self) -> frozenset[int]:
        """The code points of the characters some word begins with."""
        return frozenset(self._where)

    def group(self, first: str) -> dict[str, int]:
        """The words beginning with the character ``first`` and their frequencies (none: empty)."""
        return self._group(first)[0]

    def _group(self, first: str) -> tuple[dict[str, int], int]:
        """:meth:`group`, and the length of its longest word (0 for none), read once."""
        found = self._groups.get(first)
        if found is None:
            span = self._where.get(ord(first))
            words: dict[str, int] = {}
            if span is not None:
                raw = zlib.decompress(self._data[span[0] : span[1]])
                cut = raw.index(b"\0")
                freqs = array("I")
                freqs.frombytes(raw[cut + 1 :])
                if sys.byteorder != "little":
                    freqs.byteswap()
                words = dict(zip(raw[:cut].decode("utf-8").split("\n"), freqs, strict=True))
            found = self._groups[first] = (words, max(map(len, words), default=0))
        return found

    def words_in(self, runs: Iterable[str]) -> dict[str, int]:
        """Every dictionary word that occurs in one of ``runs``, with its frequency."""
        found: dict[str, int] = {}
        for run in runs:
            size = len(run)
            for i, first in enumerate(run):
                group, longest = self._group(first)
                for end in range(i + 1, min(size, i + longest) + 1):
                    word = run[i:end]
                    freq = group.get(word)
                    if freq is not None:
                        found[word] = freq
        return found


@cache
def dictionary() -> Dictionary:
    """The dictionary of the package's data file, read once per process (os.path: importlib.resources
    would import pathlib, tempfile and zipfile into every recall that cuts Chinese)."""
    path = os.path.join(os.path.dirname(__file__), "data", "jieba-words.bin")
    with open(path, "rb") as handle:
        return Dictionary(handle.read())


@cache
def native() -> ModuleType:
    """rjieba's compiled module, loaded alone: importing the ``rjieba`` package builds its whole default
    dictionary (the package's ``__init__`` does), loading its extension does not."""
    spec = util.find_spec("rjieba")
    if spec is None or spec.origin is None:
        raise ImportError("rjieba is not installed")
    folder = os.path.dirname(spec.origin)
    [name] = [f for f in os.listdir(folder) if f.startswith("rjieba.") and f.endswith((".so", ".pyd"))]
    loader = machinery.ExtensionFileLoader("rjieba.rjieba", os.path.join(folder, name))
    found = util.spec_from_file_location("rjieba.rjieba", loader.path, loader=loader)
    assert found is not None
    module = util.module_from_spec(found)
    loader.exec_module(module)
    return module


def usable(rjieba_version: str) -> bool:
    """Whether text may be cut with its own words here: rjieba is a release the data was built for, its
    compiled module loads alone and the data file reads. Otherwise rjieba's whole dictionary cuts (the
    same words, only slower to start)."""
    if rjieba_version not in RJIEBA_VERSIONS:
        return False
    try:
        native()
        dictionary()
    except (ImportError, OSError, ValueError, struct.error, zlib.error):
        return False
    return True


def cutter(runs: Iterable[str]) -> Any:
    """An rjieba ``Jieba`` that cuts each of ``runs`` as the whole dictionary does: the dictionary's words
    that occur in them, and :data:`PAD` for the rest of the total frequency."""
    words = dictionary()
    found = words.words_in(runs)
    jieba = native().Jieba.empty()
    for word, freq in found.items():
        jieba.add_word(word, freq, None)
    jieba.add_word(PAD, words.total - sum(found.values()), None)
    return jieba
