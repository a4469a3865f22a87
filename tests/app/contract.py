"""Checks of a response against the contract, shared by the tiny-model and shipped-model tests."""

from __future__ import annotations

from app.services.language import Words

fmt = Words("en").figure  # the recap's English, as the page writes its numbers

RECURRENT_ATTENTION = ("lstm-additive", "lstm-dot")


def check_translation(body: dict, name: str) -> None:
    assert body["model"] == name
    assert isinstance(body["translation"], str)
    assert body["source_tokens"] and all(isinstance(t, str) for t in body["source_tokens"])
    assert all(isinstance(t, str) for t in body["target_tokens"])


def check_attention(body: dict, name: str, layers: int, heads: int) -> None:
    """Shapes match the tokens, rows sum to 1, decoder maps are causal, and the set of maps is
    what the model computes: none, one cross map, or every (kind, layer, head)."""
    check_translation(body, name)
    source, target = body["source_tokens"], body["target_tokens"]
    maps = body["maps"]
    if name in ("rnn", "lstm"):
        assert maps == []
        return
    if name in RECURRENT_ATTENTION:
        assert [(m["kind"], m["layer"], m["head"]) for m in maps] == [("cross", 0, 0)]
    else:
        keys = {(m["kind"], m["layer"], m["head"]) for m in maps}
        assert keys == {(k, layer, h) for k in ("cross", "encoder", "decoder")
                        for layer in range(layers) for h in range(heads)}
    axes = {"cross": (target, source), "encoder": (source, source),
            "decoder": (target, ["<bos>", *target][: len(target)])}
    for m in maps:
        assert (m["rows"], m["cols"]) == axes[m["kind"]], m["kind"]
        check_weights(m)


def check_weights(m: dict) -> None:
    weights = m["weights"]
    assert len(weights) == len(m["rows"])
    for i, row in enumerate(weights):
        assert len(row) == len(m["cols"])
        assert all(0 <= w <= 1 for w in row)
        assert abs(sum(row) - 1) < 1e-3, (m["kind"], i, sum(row))
        if m["kind"] == "decoder":
            assert all(w == 0 for w in row[i + 1 :]), "decoder self-attention must not see the future"


def assert_recap_is_the_chapters(client, text: str) -> None:
    """The recap's rows of the gradients, attention (both), scaling and prediction chapters against the
    answers of the requests those chapters make."""
    answer = client.post("/api/recap", json={"text": text}).json()["rows"]
    rows = {r["chapter"]: r["text"] for r in answer if r["part"] is None}
    [one_line] = [r["text"] for r in answer if r["part"] == "lookup"]
    gradients = client.post("/api/gradients", json={"text": text}).json()
    back = len(gradients["tokens"]) - 1
    for curve in gradients["curves"]:
        assert f"{fmt(curve['norm'][back] / curve['norm'][0])}× for {curve['model']}" in rows["gradients"]
    models = client.get("/api/models").json()
    aligning = next(m["name"] for m in models if m["recurrent"] and m["cross_attention"])
    scores = client.post("/api/scores", json={"text": text, "model": aligning, "row": 0}).json()
    assert f"puts {fmt(scores['max_weight'])} of its weight" in rows["attention"]
    lookup = client.post("/api/lookup", json={"text": text, "head": 0}).json()
    strongest = max(w for row in lookup["weights"] for w in row)
    assert one_line.startswith(f"head 1 of the {lookup['model']}'s first encoder layer: ")
    assert f"puts {fmt(strongest)} of its weight" in one_line
    assert f"to within {fmt(lookup['max_abs_difference'])} (its entries reach {fmt(lookup['output_scale'])})" \
        in one_line
    at = client.post("/api/scaling", json={"text": text}).json()["sampled"]["at_model_d_k"]
    unscaled, scaled = fmt(at["unscaled"]["max_weight"]), fmt(at["scaled"]["max_weight"])
    assert f"is {unscaled} unscaled, {scaled} divided" in rows["scaling"]
    predicted = client.post("/api/predict", json={"text": text, "top_k": 5}).json()
    assert f"with probability {fmt(predicted['steps'][0]['probability'])}" in rows["prediction"]
    assert f"greedy writes “{predicted['translation']}”" in rows["prediction"]
