"""Tatoeba French-English pairs: read from the zip, normalise, split without leakage.

Tatoeba repeats sentences: one English sentence often has several French translations and the
other way round. If "Je mange." -> "I'm eating." sat in train and "Je mange." -> "I eat." in
test, the test would reward memorisation. So pairs are grouped into connected components
(two pairs are linked when they share a French or an English sentence) and whole components are
assigned to a split.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import unicodedata
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

DEFAULT_ZIP = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "fra-eng-2017.zip"
ZIP_ENV = "ATTENTION_LAB_DATA"
MEMBER = "fra.txt"

VALID_PAIRS = 2000  # target size of the validation split
TEST_PAIRS = 2000  # target size of the test split
MAX_HELD_OUT_COMPONENT = 40  # bigger components stay in train so the held-out sets stay varied

# Typographic characters a French keyboard or a copy-paste produces, mapped to what the
# tokenizer was trained on. NFKC already folds most compatibility forms; these it keeps.
_ASCII_QUOTES = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u00ab": '"', "\u00bb": '"',
    }
)
_SPACES = re.compile(r"[\s\u00a0\u2000-\u200b\u202f\u205f\u3000\ufeff]+")
_CONTROL = re.compile(r"[\u0000-\u0008\u000e-\u001f\u007f-\u009f]")


def normalize(text: str) -> str:
    """The normalisation applied to the corpus and to whatever a user types. Case is kept."""
    text = unicodedata.normalize("NFKC", text)
    text = text.translate(_ASCII_QUOTES)
    text = _CONTROL.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


@dataclass(frozen=True)
class Pair:
    fr: str  # source
    en: str  # target


@dataclass(frozen=True)
class Split:
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    hash: str  # identifies exactly which pairs went where


def data_path(path: str | os.PathLike | None = None) -> Path:
    """Flag beats environment variable beats the shared default."""
    return Path(path or os.environ.get(ZIP_ENV) or DEFAULT_ZIP)


def read_pairs(path: str | os.PathLike | None = None) -> list[Pair]:
    """Every `English<TAB>French` line of fra.txt as a normalised (fr, en) pair, duplicates dropped."""
    zpath = data_path(path)
    if not zpath.exists():
        raise FileNotFoundError(f"Tatoeba zip not found at {zpath} (set {ZIP_ENV} or --data)")
    with zipfile.ZipFile(zpath) as zf, zf.open(MEMBER) as fh:
        lines = fh.read().decode("utf-8").splitlines()
    seen: set[Pair] = set()
    pairs = []
    for line in lines:
        en, sep, fr = line.partition("\t")
        if not sep:
            continue
        pair = Pair(fr=normalize(fr.split("\t")[0]), en=normalize(en))
        if pair.fr and pair.en and pair not in seen:
            seen.add(pair)
            pairs.append(pair)
    return pairs


def components(pairs: list[Pair]) -> list[list[int]]:
    """Indices of pairs grouped so that pairs sharing a French or English sentence are together."""
    parent = list(range(len(pairs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]  # path halving keeps the trees flat
            i = parent[i]
        return i

    first_owner: dict[tuple[str, str], int] = {}
    for i, pair in enumerate(pairs):
        for key in (("fr", pair.fr), ("en", pair.en)):
            j = first_owner.setdefault(key, i)
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[ri] = rj
    groups: dict[int, list[int]] = {}
    for i in range(len(pairs)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _component_key(pairs: list[Pair], group: list[int]) -> str:
    """A stable pseudo-random order for components, independent of file order."""
    text = min(pairs[i].fr + "\t" + pairs[i].en for i in group)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def split_pairs(pairs: list[Pair]) -> Split:
    groups = sorted(components(pairs), key=lambda g: _component_key(pairs, g))
    test: list[int] = []
    valid: list[int] = []
    train: list[int] = []
    for group in groups:
        small = len(group) <= MAX_HELD_OUT_COMPONENT
        if small and len(test) < TEST_PAIRS:
            test.extend(group)
        elif small and len(valid) < VALID_PAIRS:
            valid.extend(group)
        else:
            train.extend(group)
    parts = [sorted(train), sorted(valid), sorted(test)]
    digest = hashlib.sha256()
    for name, part in zip(("train", "valid", "test"), parts, strict=True):
        digest.update(name.encode())
        for i in part:
            digest.update(f"{pairs[i].fr}\t{pairs[i].en}\n".encode())
    train_p, valid_p, test_p = ([pairs[i] for i in part] for part in parts)
    return Split(train=train_p, valid=valid_p, test=test_p, hash=digest.hexdigest()[:16])


@lru_cache(maxsize=2)
def load_split(path: str | None = None) -> Split:
    """The deterministic train/valid/test split of the corpus (cached per process)."""
    return split_pairs(read_pairs(path))


def main() -> None:
    parser = argparse.ArgumentParser(description="Show the Tatoeba split")
    parser.add_argument("--data", default=None, help=f"path to the zip (or ${ZIP_ENV})")
    args = parser.parse_args()
    split = load_split(args.data)
    for name in ("train", "valid", "test"):
        part = getattr(split, name)
        print(f"{name:5s} {len(part):7d} pairs, e.g. {part[len(part) // 2]}")
    print(f"split hash {split.hash}")


if __name__ == "__main__":
    main()
