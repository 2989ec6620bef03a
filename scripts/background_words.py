"""Build yiji's background word frequencies (``src/yiji/domain/data/background/``) from two MIT-licensed
sources: spaCy's English lexeme probabilities (``spacy-lookups-data``, ``en_lexeme_prob.json.gz``) and
jieba's dictionary (``jieba``, ``dict.txt``: word, count, part of speech).

Each source word is cut by yiji's own segmenter, so a line's term is one the index holds (English words
lower-cased and stemmed, their probabilities summed per stem; a Chinese word and, for its characters, the
count of each character over the dictionary's words). The most frequent ``--top`` terms of each language are
kept, as ``term<TAB>n`` with ``n`` the term's share of the language's tokens in hundredths of a natural log
(``-ln p * 100``, rounded). Run from the repository:

    uv run python scripts/background_words.py --en en_lexeme_prob.json.gz --zh dict.txt
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from collections import Counter
from pathlib import Path

from yiji.domain import segment

OUT = Path(__file__).resolve().parent.parent / "src" / "yiji" / "domain" / "data" / "background"


def english(path: Path) -> dict[str, float]:
    probs: Counter[str] = Counter()
    for word, logp in json.loads(gzip.open(path).read()).items():
        cut = segment.tokens(word)
        if len(cut) == 1 and cut[0].isascii():
            probs[cut[0]] += math.exp(logp)
    return dict(probs)


def chinese(path: Path) -> dict[str, float]:
    counts: Counter[str] = Counter()
    for line in path.read_text("utf-8").splitlines():
        word, count, *_ = line.split(" ")
        if not word or not all("\u4e00" <= ch <= "\u9fff" for ch in word):
            continue
        n = int(count)
        counts[word] += n
        if len(word) > 1:
            for ch in word:
                counts[ch] += n
    total = sum(counts.values())
    return {term: n / total for term, n in counts.items()}


def write(name: str, probs: dict[str, float], top: int) -> None:
    best = sorted(probs.items(), key=lambda item: (-item[1], item[0]))[:top]
    lines = [f"{term}\t{round(-math.log(p) * 100)}" for term, p in sorted(best)]
    (OUT / f"{name}.tsv").write_text("\n".join(lines) + "\n", "utf-8")
    print(f"{name}: {len(lines)} terms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--en", type=Path, required=True, help="spacy-lookups-data's en_lexeme_prob.json.gz")
    parser.add_argument("--zh", type=Path, required=True, help="jieba's dict.txt")
    parser.add_argument("--top", type=int, default=40000, help="terms kept per language")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    write("en", english(args.en), args.top)
    write("zh", chinese(args.zh), args.top)


if __name__ == "__main__":
    main()
