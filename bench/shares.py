"""What a typing reader uses of its share of model time (prints figures; not a test).

    .venv/bin/python bench/shares.py                      # one 107-key sentence at ?ch=gradients, 100 ms a key
    .venv/bin/python bench/shares.py --continuous 60      # and then 60 s of sentences typed back to back
    .venv/bin/python bench/shares.py --url http://127.0.0.1:8000 --json bench/results/shares.json

The gradients chapter's gradient experiments are charged to each client by the seconds of model time their work
took (app/runtime/shares.py; ATTENTION_LAB_SHARE_MODEL_TIME, a bucket of `q` seconds that empties at
q/w seconds a second). The page asks POST /api/gradients at every key (its pause, 70 ms, is shorter
than a key), each ask superseding the one before; what was superseded before it began costs nothing,
what began costs what it ran. Here Chromium (Playwright) opens `?ch=gradients` on a server started as `make
serve` starts it (the shipped checkpoints, the default settings: shares on, the admission bound),
waits for the server's start-up work (the answers computed ahead, the stepper processes), then
types a 107-key French sentence over the text box one key every --key-ms, and reads the RateLimit
header (`"model_time";r=<seconds left>;t=<seconds until empty>`) of every POST /api/gradients
answer. With --continuous S it then types further sentences back to back, one key every --key-ms,
for S seconds, in the same page (the same client, so the same bucket).

Printed per run: requests sent (the gradients asks apart) and the answers' statuses (429: the share
spent; 503: admission's bound on the model queue's wait), the requests the page dropped (superseded),
the model thread's busy seconds meanwhile (GET /metrics: all its work, compares included), the wall
time from the first key to the last gradients answer, the lowest `r` seen, and the model seconds
charged: what the bucket held at an answer (q - r, or t x the drain rate, the finer: r is rounded
down, t up) less what it held at the first key, plus what it drained meanwhile (the drain rate x the
time since the first key: an upper bound, the bucket may have been empty for a while after the
first key; "at least" leaves the drain out).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright
from readers import UVICORN_LIMITS  # bench/readers.py: `make serve`'s uvicorn limits
from serving import CHROMIUM, CHROMIUM_ARGS, JUST_SHOW_ME, serve, write_report  # bench/serving.py

SENTENCE = ("Le petit chat gris dort tranquillement sur le canapé du salon, pendant que la pluie tombe"
            " doucement dehors.")  # 107 keys
MORE = [  # typed back to back with --continuous, each new to the server's cache
    "Mon voisin répare sa vieille voiture rouge dans le garage tous les samedis matin avant le déjeuner.",
    "Les enfants jouent au ballon dans le parc pendant que leurs parents discutent sur un banc au soleil.",
    "Nous avons visité un petit musée au bord de la mer, puis nous avons mangé des crêpes près du port.",
    "Elle lit un roman policier très long dans le train qui la ramène chez ses grands-parents à Lyon.",
    "Le boulanger du quartier ouvre sa boutique très tôt et vend du pain chaud aux voisins encore endormis.",
    "Après la réunion, mon collègue a oublié son parapluie noir dans la salle et il est rentré sous l'orage.",
    "Ce soir, nous regarderons un vieux film en noir et blanc avec nos amis qui viennent de Marseille.",
    "Le jardinier arrose les fleurs du château chaque matin, même quand il fait froid et que le ciel est gris.",
]
FIRST_UPDATE = "() => window.attentionLab && window.attentionLab.lastUpdate !== null"
RATELIMIT = re.compile(r'"model_time";r=(?P<r>-?\d+);t=(?P<t>\d+)')
POLICY = re.compile(r'"model_time";q=(?P<q>\d+);w=(?P<w>\d+)')
START_UP = {"ahead": re.compile(r"computed ahead"), "steppers": re.compile(r"stepper \d+ ready")}
SERVER_ENV = {**UVICORN_LIMITS}  # everything else at its default: shares on, ATTENTION_LAB_MAX_WAIT


class Recorder:
    """Every request the page makes under /api/, every answer (with when it came), every drop."""

    def __init__(self, page):
        self.sent, self.answers, self.dropped = [], [], []
        api = lambda r: "/api/" in r.url  # noqa: E731
        page.on("request", lambda r: api(r) and self.sent.append(r))
        page.on("response", lambda r: api(r) and self.answers.append((time.monotonic(), r)))
        page.on("requestfailed", lambda r: api(r) and self.dropped.append(r))

    def mark(self) -> tuple[int, int, int]:
        return len(self.sent), len(self.answers), len(self.dropped)

    def gradients(self, since: tuple[int, int, int] = (0, 0, 0)) -> list[tuple[float, dict]]:
        """(when, {status, r, t, q, w}) of each POST /api/gradients answer after `since`."""
        found = []
        for at, response in self.answers[since[1]:]:
            if response.request.method != "POST" or not response.url.endswith("/api/gradients"):
                continue
            limit = RATELIMIT.search(response.headers.get("ratelimit", ""))
            policy = POLICY.search(response.headers.get("ratelimit-policy", ""))
            found.append((at, {"status": response.status, **({k: int(v) for k, v in limit.groupdict().items()}
                                                               if limit else {}),
                               **({k: int(v) for k, v in policy.groupdict().items()} if policy else {})}))
        return found


def route(request) -> str:
    return f"{request.method} /api/{request.url.split('/api/', 1)[1].split('?')[0]}"


def wait_for_start_up(log: Path, timeout: float) -> dict[str, float | None]:
    """Seconds until the server's start-up work was done (None: not within `timeout`)."""
    began, done = time.monotonic(), {}
    while len(done) < len(START_UP) and time.monotonic() - began < timeout:
        text = log.read_text()
        for name, pattern in START_UP.items():
            if name not in done and pattern.search(text):
                done[name] = round(time.monotonic() - began, 1)
        time.sleep(0.5)
    return {name: done.get(name) for name in START_UP}


def wheel_to(page, chapter: str) -> None:
    """Scroll with the mouse wheel until the chapter's heading is near the top, as a reader does."""
    heading = f"document.querySelector('section[data-chapter=\"{chapter}\"] h2').getBoundingClientRect().top"
    page.mouse.move(640, 450)
    for _ in range(300):
        top = page.evaluate(heading)
        if 150 <= top <= 400:
            break
        page.mouse.wheel(0, max(-500, min(500, top - 250)))
        page.wait_for_timeout(30)
    page.wait_for_timeout(300)


def type_over(page, text: str, key_ms: int) -> float:
    """Select the text box's whole content and type `text` over it, one key every `key_ms` (paced by
    the clock: a key's own round trip to the page is within its interval); the seconds it took."""
    page.get_by_test_id("source").click()
    page.keyboard.press("ControlOrMeta+a")
    began = time.monotonic()
    for i, key in enumerate(text):
        page.keyboard.type(key)
        page.wait_for_timeout(max(0.0, began + (i + 1) * key_ms / 1000 - time.monotonic()) * 1000)
    return time.monotonic() - began


def settle(page, text: str, timeout_ms: int) -> float:
    """Wait until every view shows `text` and the gradients chapter's curves are drawn; seconds it took."""
    began = time.monotonic()
    page.wait_for_function("t => window.attentionLab.lastUpdate?.text === t", arg=text, timeout=timeout_ms)
    page.wait_for_function("() => { const el = document.getElementById('grad-plot'); return !el.dataset.stale"
                           " && !el.classList.contains('is-busy') && el.dataset.state === 'drawn'; }",
                           timeout=timeout_ms)
    return time.monotonic() - began


def busy_seconds(url: str) -> float | None:
    """The model thread's busy seconds so far (GET /metrics), None if it does not say."""
    with contextlib.suppress(httpx.HTTPError):
        text = httpx.get(f"{url}/metrics").text
        found = re.search(r"^attention_lab_model_busy_seconds_total (\S+)$", text, re.M)
        return float(found[1]) if found else None
    return None


def level(g: dict) -> float:
    """Seconds of model time the bucket held by an answer's RateLimit: the finer of q - r (r rounded
    down) and t x the drain rate (t rounded up)."""
    return max(0.0, min(g["q"] - g["r"], g["t"] * g["q"] / g["w"]))


def figures(recorder: Recorder, since: tuple[int, int, int], began: float, keys: int,
            before: tuple[float, dict] | None, settled_s: float, busy_s: float | None) -> dict:
    """One run's figures: requests, statuses, and the model time charged."""
    sent = recorder.sent[since[0]:]
    answers = recorder.answers[since[1]:]
    gradients = recorder.gradients(since)
    told = [(at, g) for at, g in gradients if "r" in g]
    result = {
        "keys": keys,
        "requests_sent": len(sent),
        "by_route": dict(Counter(route(r) for r in sent)),
        "statuses": dict(Counter(r.status for _, r in answers)),
        "dropped_by_page": len(recorder.dropped) - since[2],
        "gradients_sent": sum(route(r) == "POST /api/gradients" for r in sent),
        "gradients_answered": len(gradients),
        "gradients_statuses": dict(Counter(g["status"] for _, g in gradients)),
        "refused_429": sum(r.status == 429 for _, r in answers),
        "refused_503": sum(r.status == 503 for _, r in answers),
        "settle_s": round(settled_s, 1),
        "model_thread_busy_s": None if busy_s is None else round(busy_s, 1),
    }
    if not told:
        return result
    q, w = told[-1][1]["q"], told[-1][1]["w"]
    rate = q / w
    # what the bucket held at the first key: the last answer before it, drained since
    start = max(0.0, level(before[1]) - rate * (began - before[0])) if before else 0.0
    lowest_at, lowest = max(told, key=lambda x: level(x[1]))
    # charged by an answer: what the bucket gained since the first key, plus what it drained meanwhile
    # (at most the drain rate x the time since the first key: the bucket may have been empty a while)
    least = max(level(g) - start for _, g in told)
    most = max(level(g) - start + rate * (at - began) for at, g in told)
    result.update({
        "policy": {"q": q, "w": w, "drain_per_s": rate},
        "level_at_first_key_s": round(start, 1),
        "lowest_r": lowest["r"], "lowest_r_t": lowest["t"], "lowest_r_at_s": round(lowest_at - began, 1),
        "last_r": told[-1][1]["r"], "last_t": told[-1][1]["t"],
        "wall_s": round(told[-1][0] - began, 1),
        "model_s_charged": round(most, 1),
        "model_s_charged_at_least": round(least, 1),
        "model_s_per_wall_s": round(most / max(1e-9, told[-1][0] - began), 2),
    })
    return result


def show(name: str, f: dict) -> None:
    print(f"{name}: {f['keys']} keys; {f['requests_sent']} /api requests sent {f['by_route']}, "
          f"statuses {f['statuses']}, {f['dropped_by_page']} dropped by the page (superseded)")
    print(f"  POST /api/gradients: {f['gradients_sent']} sent, {f['gradients_answered']} answered "
          f"{f['gradients_statuses']}; 429: {f['refused_429']}, 503: {f['refused_503']} (all routes); "
          f"last key -> curves drawn {f['settle_s']} s; model thread busy {f['model_thread_busy_s']} s "
          f"(GET /metrics)")
    if "policy" not in f:
        print("  no RateLimit header seen: shares off on this server?")
        return
    p = f["policy"]
    print(f"  share: q={p['q']} s of model time per w={p['w']} s (drains {p['drain_per_s']:g} s/s); "
          f"it held {f['level_at_first_key_s']} s at the first key")
    print(f"  lowest r {f['lowest_r']} (t={f['lowest_r_t']}) at {f['lowest_r_at_s']} s after the first key; "
          f"last answer r={f['last_r']} t={f['last_t']} at {f['wall_s']} s (wall time)")
    print(f"  model time charged: {f['model_s_charged']} s (q - r plus {p['drain_per_s']:g} s/s drained; at "
          f"least {f['model_s_charged_at_least']} s) over {f['wall_s']} s: {f['model_s_per_wall_s']} model s "
          f"per wall s; {p['q'] - f['lowest_r']} of {p['q']} s held at the fullest")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a running server; default: start one as `make serve` does")
    parser.add_argument("--key-ms", type=int, default=100, help="milliseconds between keys (default 100)")
    parser.add_argument("--continuous", type=float, default=0,
                        help="then type sentences back to back for this many seconds (default: none)")
    parser.add_argument("--start-up", type=float, default=600,
                        help="seconds to wait at most for the started server's start-up work (default 600)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    report: dict = {"cores": os.cpu_count(), "key_ms": args.key_ms}
    with contextlib.ExitStack() as stack:
        if args.url:
            url = args.url.rstrip("/")
        else:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "uvicorn.log"
            out = stack.enter_context(log.open("w+"))
            url = stack.enter_context(serve(SERVER_ENV, timeout=300, log_level="info", log=out))
            report["start_up_s"] = wait_for_start_up(log, args.start_up)
            print(f"server up; its start-up work done after: {report['start_up_s']} s")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
            context.add_init_script(JUST_SHOW_ME)
            context.add_cookies([{"name": "questions", "value": "show", "url": url}])
            page = context.new_page()
            recorder = Recorder(page)
            page.goto(f"{url}/?ch=gradients")
            page.wait_for_function(FIRST_UPDATE, timeout=120_000)
            wheel_to(page, "gradients")
            settle(page, page.get_by_test_id("source").input_value(), 300_000)
            told = [x for x in recorder.gradients() if "r" in x[1]]
            before = told[-1] if told else None

            since, began, busy = recorder.mark(), time.monotonic(), busy_seconds(url)
            typed_s = type_over(page, SENTENCE, args.key_ms)
            settled = settle(page, SENTENCE, 300_000)
            busy = busy_seconds(url) - busy if busy is not None else None
            report["sentence"] = {**figures(recorder, since, began, len(SENTENCE), before, settled, busy),
                                  "typing_s": round(typed_s, 1)}
            show(f"one sentence at ?ch=gradients, typed in {typed_s:.1f} s "
                 f"({typed_s * 1000 / len(SENTENCE):.0f} ms a key)", report["sentence"])

            if args.continuous:
                told = [x for x in recorder.gradients() if "r" in x[1]]
                before = told[-1] if told else None
                since, began, keys, busy = recorder.mark(), time.monotonic(), 0, busy_seconds(url)
                for text in [s for _ in range(100) for s in MORE]:
                    left = args.continuous - (time.monotonic() - began)
                    if left * 1000 < args.key_ms:
                        break
                    text = text[:int(left * 1000 / args.key_ms)]  # what fits
                    type_over(page, text, args.key_ms)
                    keys += len(text)
                typed_s = time.monotonic() - began
                settled = settle(page, page.get_by_test_id("source").input_value(), 300_000)
                busy = busy_seconds(url) - busy if busy is not None else None
                report["continuous"] = {**figures(recorder, since, began, keys, before, settled, busy),
                                        "typing_s": round(typed_s, 1)}
                show(f"{typed_s:.0f} s of continuous typing at ?ch=gradients "
                     f"({typed_s * 1000 / keys:.0f} ms a key)", report["continuous"])
            context.close()
            browser.close()
    write_report(args.json, report)


if __name__ == "__main__":
    main()
