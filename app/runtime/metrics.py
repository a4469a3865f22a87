"""What an operator scrapes: GET /metrics in Prometheus's text format (prometheus-client).

Two kinds of figures. Request latencies are observed as requests end (`RequestLog` calls
`Metrics.observe`), into one histogram per method, route template and status. Everything else is
read from the live objects when Prometheus scrapes (`State.collect`), so the model thread and the
middlewares only bump plain counters, and the hot path never formats a metric:

- the model thread: turns waiting for it (queue depth), seconds busy, per model the sentences
  decoded together per step and the wait for a sentence's first step;
- requests: model requests admitted now and the admission limit, refused (503), superseded by a
  newer keystroke (X-Supersede-Key), and model work dropped (skipped before its turn, stopped
  between decoder steps);
- the result cache: entries, estimated bytes, hits and misses;
- live training: slots and runs in progress.

Each app has its own CollectorRegistry (tests build many apps in one process). The autoscaler's
signal is the model queue plus the requests in flight (deploy/README.md), not the CPU: a replica's
cores are busy whether it serves one typist or sixty.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

PREFIX = "attention_lab"
CONTENT_TYPE = CONTENT_TYPE_LATEST
# from a cached answer (milliseconds) to a long gradient or timing run (seconds)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30)
BATCH_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)


@dataclass
class Traffic:
    """What the HTTP middlewares count (app/admission.py, app/disconnect.py); read by `State`."""

    in_flight: int = 0  # model requests admitted and not yet answered
    limit: int = 0  # at most this many (ATTENTION_LAB_QUEUE_LIMIT)
    refused: int = 0  # answered 503 at the door
    superseded: int = 0  # replaced by a newer request with the same X-Supersede-Key
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, name: str, by: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + by)


class Metrics:
    def __init__(self) -> None:
        disable_created_metrics()  # no *_created series: one per label set, and nothing graphs them
        self.registry = CollectorRegistry()
        self.traffic = Traffic()
        self.latency = Histogram(f"{PREFIX}_request_duration_seconds",
                                 "Time from a request's arrival to its answer's last byte, by route template",
                                 ["method", "route", "status"], buckets=LATENCY_BUCKETS, registry=self.registry)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.latency.labels(method, route, str(status)).observe(seconds)

    def watch(self, registry: Callable[[], object], live: object) -> None:
        """Read the model registry (through a getter: it is loaded in the lifespan) and the live
        training runs when scraped."""
        self.registry.register(State(registry, live, self.traffic))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class State(Collector):
    def __init__(self, registry: Callable[[], object], live: object, traffic: Traffic):
        self.get_registry = registry
        self.live = live
        self.traffic = traffic

    def collect(self) -> Iterator:
        yield from self._requests()
        registry = self.get_registry()
        if registry is not None:
            yield from self._model_thread(registry.jobs.thread)
            yield from self._cache(registry.jobs.cache)
        yield from self._training()

    def _requests(self) -> Iterator:
        t = self.traffic
        yield _gauge("requests_in_flight", "Model requests admitted and not yet answered", t.in_flight)
        yield _gauge("requests_limit", "Model requests a replica admits at once (more: 503)", t.limit)
        yield _counter("requests_refused", "Model requests answered 503: the replica was full", t.refused)
        yield _counter("requests_superseded", "Requests replaced by a newer one with the same X-Supersede-Key",
                       t.superseded)

    def _model_thread(self, worker) -> Iterator:
        load = worker.load
        yield _gauge("model_queue_depth", "Turns waiting for the model thread", load.waiting)
        yield _counter("model_busy_seconds", "Seconds the model thread spent running turns (rate: busy share)",
                       load.busy_seconds)
        yield _counter("model_paused_turns", "Turns run while a longer one paused for them (interactive first)",
                       load.paused)
        dropped = CounterMetricFamily(f"{PREFIX}_model_dropped", "Model work nobody wanted any more",
                                      labels=["reason"])
        for reason, count in worker.dropped.as_dict().items():
            dropped.add_metric([reason], count)
        yield dropped
        batch = HistogramMetricFamily(f"{PREFIX}_model_batch_size",
                                      "Sentences one model run or decoding step decoded together (1: alone), "
                                      "by model (\"\": work of no one model)", labels=["model"])
        first = HistogramMetricFamily(f"{PREFIX}_model_first_step_seconds", "Time from a stepped sentence's "
                                      "arrival to its first decoding step, by model", labels=["model"])
        for model in load.models():
            batch.add_metric([model], *load.histogram(BATCH_BUCKETS, model)[:2])
            buckets, total, count = load.wait_histogram(model)
            if count:
                first.add_metric([model], buckets, total)
        yield batch
        yield first

    def _cache(self, cache) -> Iterator:
        yield _gauge("cache_entries", "Answers kept in the result cache", len(cache))
        yield _gauge("cache_bytes", "Estimated memory the cached answers hold", cache.bytes)
        lookups = CounterMetricFamily(f"{PREFIX}_cache_lookups", "Result cache lookups", labels=["result"])
        lookups.add_metric(["hit"], cache.hits)
        lookups.add_metric(["miss"], cache.misses)
        yield lookups

    def _training(self) -> Iterator:
        slots = GaugeMetricFamily(f"{PREFIX}_training_slots", "Live training slots of this replica",
                                  labels=["state"])
        slots.add_metric(["total"], self.live.slots)
        slots.add_metric(["running"], self.live.running)
        yield slots


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(f"{PREFIX}_{name}", doc, value=value)
