"""Build ``src/yiji/domain/data/jieba-words.bin`` from jieba's dictionary (``dict.txt``, MIT licence).

yiji cuts Chinese with rjieba, whose dictionary is jieba's ``dict.txt``; building it takes about 0.1 s in
every process that cuts a CJK run. A short text (a query, a hook's prompt) needs only the dictionary words
that occur in it, with the dictionary's total frequency: :mod:`yiji.domain.jieba_words` reads them from
this file, so such a process never builds the whole dictionary (the cut is the same, see that module).

Usage: ``python scripts/jieba_words.py PATH/TO/jieba/dict.txt [OUT]`` (jieba 0.42.1's ``jieba/dict.txt``,
the dictionary rjieba embeds). The file holds the words made of CJK characters only (no other word can
occur in a CJK run), grouped by their first character, each group compressed on its own::

    b"YJW2"  u64 total frequency of every word of dict.txt   u32 groups  u32 longest word (characters)
    u32[groups] first characters (code points, increasing)   u32[groups + 1] offsets into the groups
    a group: zlib of its words (UTF-8, one per line, sorted), a NUL byte, and their frequencies (u32 each)

(little-endian throughout: a group is read with two C-level calls, a split and an array, not line by line)
"""

from __future__ import annotations

import re
import struct
import sys
import zlib
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from yiji.domain.segment import CJK_CHARACTERS  # noqa: E402

MAGIC = b"YJW2"


def build(source: Path, out: Path) -> None:
    only_cjk = re.compile(f"[{CJK_CHARACTERS}]+")
    total = 0
    groups: dict[int, list[tuple[str, int]]] = {}
    seen: set[str] = set()
    for line in source.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if not parts:
            continue
        word, freq = parts[0], int(parts[1])
        total += freq  # every line counts, as the dictionary's loader sums them
        if only_cjk.fullmatch(word) and word not in seen:
            seen.add(word)
            groups.setdefault(ord(word[0]), []).append((word, freq))
    firsts = sorted(groups)
    blobs = []
    for c in firsts:
        words = sorted(groups[c])
        text = "\n".join(w for w, _ in words).encode("utf-8")
        freqs = array("I", [f for _, f in words])
        if sys.byteorder != "little":
            freqs.byteswap()
        blobs.append(zlib.compress(text + b"\0" + freqs.tobytes(), 9))
    offsets = [0]
    for blob in blobs:
        offsets.append(offsets[-1] + len(blob))
    longest = max(len(w) for w in seen)
    head = MAGIC + struct.pack("<QII", total, len(firsts), longest)
    body = struct.pack(f"<{len(firsts)}I", *firsts) + struct.pack(f"<{len(offsets)}I", *offsets)
    out.write_bytes(head + body + b"".join(blobs))
    print(f"{out}: {len(seen)} words in {len(firsts)} groups, total {total}, {out.stat().st_size} bytes")


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[1] / "src" / "yiji" / "domain" / "data" / "jieba-words.bin"
    build(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else default)
