"""Request fields -> the services' DecodeOptions (shared by translate and attention)."""

from app.schemas import AttentionRequest, TranslateRequest
from app.services.inference import DecodeOptions


def decode_options(body: TranslateRequest | AttentionRequest) -> DecodeOptions:
    return DecodeOptions(
        beam_size=getattr(body, "beam_size", 1),
        top_k=getattr(body, "top_k", 0),
        positional=body.positional,
        heads_off=tuple((h.kind, h.layer, h.head) for h in body.heads_off),
        sublayers_off=tuple(sorted(getattr(body, "sublayers_off", ()))),
    )
