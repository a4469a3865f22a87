import pytest

from models.data import Pair, components, load_split, normalize, split_pairs


def test_normalize_folds_typography_and_keeps_case():
    assert normalize("  Il\u00a0fait   beau\u202f!  ") == "Il fait beau !"
    assert normalize("C\u2019est \u00abbien\u00bb") == 'C\'est "bien"'
    assert normalize("ﬁn\tdu\nmonde") == "fin du monde"  # NFKC ligature, tabs and newlines
    assert normalize("Je Mange") == "Je Mange"
    assert normalize("\x00\x07") == ""


def test_components_group_pairs_sharing_a_sentence():
    pairs = [Pair("a", "A"), Pair("b", "A"), Pair("b", "B"), Pair("c", "C")]
    groups = sorted(sorted(g) for g in components(pairs))
    assert groups == [[0, 1, 2], [3]]


@pytest.fixture(scope="module")
def split():
    return load_split()


def test_split_sizes_and_hash(split):
    assert 1900 <= len(split.valid) <= 2100 and 1900 <= len(split.test) <= 2100
    assert len(split.train) + len(split.valid) + len(split.test) > 140_000
    assert len(split.hash) == 16


def test_no_sentence_crosses_the_split(split):
    sides = {}
    for name in ("train", "valid", "test"):
        part = getattr(split, name)
        sides[name] = ({p.fr for p in part}, {p.en for p in part})
    for a, b in (("train", "valid"), ("train", "test"), ("valid", "test")):
        assert not sides[a][0] & sides[b][0], f"a French sentence is in both {a} and {b}"
        assert not sides[a][1] & sides[b][1], f"an English sentence is in both {a} and {b}"


def test_split_is_deterministic_and_independent_of_line_order(split):
    pairs = split.train[:3000] + split.valid[:300] + split.test[:300]
    first, same = split_pairs(pairs), split_pairs(list(pairs))
    assert first.hash == same.hash and first.test == same.test
    again = split_pairs(list(reversed(pairs)))
    for name in ("train", "valid", "test"):
        assert set(getattr(first, name)) == set(getattr(again, name))
