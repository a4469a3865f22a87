"""Request and response models of the JSON contract (docs/API.md), with examples so /docs is a
usable reference. Fields beyond the contract are additive and optional.

Each shape is written here once: the services build their answers as these models (app/services/),
the routes declare them, and /openapi.json is generated from them. Both sides refuse a key they do
not name: a request with one is 422, a service that made one fails where it made it.

One module per chapter or endpoint family, on the shared bases of `base` (strict requests, answers
that refuse an unnamed key and a non-finite number, the attention kinds); every public name is
re-exported here, so `from app.schemas import X` is the way to import one.

A leaf: nothing here reads the settings or calls a service. Limits that depend on the server's
settings (the text's length, the gradient input's length) are checked once, by the services, and
told to clients by GET /api/health."""

from app.schemas.base import (
    EXAMPLE_TEXT,
    NON_FINITE,
    SWITCHED_MODEL,
    AttentionKind,
    ErrorBody,
    HeadSwitch,
    NonFiniteAnswerError,
    Request,
    Response,
    Strict,
    TextRequest,
    once_each,
)
from app.schemas.catalog import (
    Clients,
    Curve,
    CurvePoint,
    Dropped,
    Example,
    Health,
    KeptPoint,
    LengthBucket,
    LengthGroup,
    Metrics,
    ModelInfo,
    Numerics,
    PageDefaults,
    Recipe,
    SnapshotPoint,
    Stepping,
    SublayerScore,
)
from app.schemas.gradients import (
    GateMeans,
    Gates,
    GradientCurve,
    Gradients,
    GradientsRequest,
)
from app.schemas.heads import (
    AlignedHead,
    Alignment,
    HeadContribution,
    HeadEffect,
    Heads,
    HeadsRequest,
    SublayerNorm,
)
from app.schemas.live import (
    TRAIN_LIMITS,
    ProcessEnd,
    Standing,
    Sweep,
    SweepRow,
    SweepSettings,
    TrainContestant,
    TrainEnd,
    TrainFinal,
    TrainInfo,
    TrainLine,
    TrainPlace,
    TrainProbe,
    TrainProgress,
    TrainQueued,
    TrainRequest,
    TrainStart,
    TrainSummary,
    Verdict,
)
from app.schemas.long_lag import (
    LagGradients,
    LagGradientsRequest,
    LagRun,
    LagTask,
    LongLagResults,
    LossPoint,
)
from app.schemas.lookup import (
    Lookup,
    LookupRequest,
)
from app.schemas.next_token import (
    NextToken,
    NextTokenRequest,
)
from app.schemas.order import (
    Order,
    OrderCheck,
    OrderRequest,
    PositionalTable,
)
from app.schemas.predict import (
    BeamNodeOut,
    PredictedStep,
    Prediction,
    PredictRequest,
)
from app.schemas.recap import (
    Recap,
    RecapRow,
)
from app.schemas.recurrence import (
    Recurrence,
    RecurrenceRequest,
)
from app.schemas.scaling import (
    HeadSpread,
    SampledCurves,
    SaturationPoint,
    Scaling,
    ScalingRequest,
)
from app.schemas.scores import (
    Blend,
    Scores,
    ScoresRequest,
)
from app.schemas.snapshots import (
    Snapshot,
    SnapshotRequest,
)
from app.schemas.timing import (
    EncoderSize,
    LengthTiming,
    TimingRequest,
    TimingRoles,
    Timings,
    TimingStatus,
)
from app.schemas.translation import (
    HEADS_OFF,
    POSITIONAL,
    Alternative,
    Attention,
    AttentionMap,
    AttentionRequest,
    Candidate,
    CompareRequest,
    ModelFailure,
    Step,
    TranslateRequest,
    Translation,
)

__all__ = [
    "AlignedHead", "Alignment", "Alternative", "Attention", "AttentionKind", "AttentionMap",
    "AttentionRequest", "BeamNodeOut", "Blend", "Candidate", "Clients", "CompareRequest", "Curve", "CurvePoint",
    "Dropped", "EXAMPLE_TEXT", "EncoderSize", "ErrorBody", "Example", "GateMeans", "Gates",
    "GradientCurve", "Gradients",
    "GradientsRequest", "HEADS_OFF", "HeadContribution", "HeadEffect", "HeadSpread", "HeadSwitch", "Heads",
    "HeadsRequest", "Health", "KeptPoint", "LagGradients", "LagGradientsRequest", "LagRun", "LagTask",
    "LengthBucket", "LengthGroup", "LengthTiming", "LongLagResults", "Lookup", "LookupRequest", "LossPoint",
    "Metrics", "ModelFailure", "ModelInfo",
    "NON_FINITE", "NextToken", "NextTokenRequest", "NonFiniteAnswerError", "Numerics", "Order", "OrderCheck",
    "OrderRequest", "POSITIONAL",
    "PageDefaults", "PositionalTable", "PredictRequest", "PredictedStep", "Prediction", "ProcessEnd",
    "Recap", "RecapRow", "Recipe", "Recurrence", "RecurrenceRequest", "Request", "Response", "SWITCHED_MODEL",
    "SampledCurves", "SaturationPoint", "Scaling", "ScalingRequest", "Scores", "ScoresRequest", "Snapshot",
    "SnapshotPoint", "SnapshotRequest", "Standing", "Step", "Stepping", "Strict", "SublayerNorm",
    "SublayerScore",
    "Sweep", "SweepRow",
    "SweepSettings", "TRAIN_LIMITS", "TextRequest", "TimingRequest", "TimingRoles", "TimingStatus",
    "Timings", "TrainContestant", "TrainEnd", "TrainFinal", "TrainInfo", "TrainLine", "TrainPlace",
    "TrainProbe", "TrainProgress", "TrainQueued", "TrainRequest", "TrainStart", "TrainSummary",
    "TranslateRequest", "Translation", "Verdict", "once_each",
]
