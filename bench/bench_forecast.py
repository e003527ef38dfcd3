"""How a study run's finished stages fared against the forecast its start made (`csc-bench run`'s probe).

Reads RUN/workers/forecast.json (each stage's forecast seconds and the machine it was probed on) and each finished
stage's done.json (its wall seconds, those of earlier pieces when it resumed, and the machine it finished on), and
prints one row per finished stage that has a forecast (when it ran, its kind, forecast, measured and their ratio), then
the sums by kind and over all. A stage that finished on another machine than the forecast's, or that resumed from a
checkpoint (its time counts each piece's start again), is marked: its ratio says less about the probe.

    python bench/bench_forecast.py runs/cpu-tiny
    python bench/bench_forecast.py runs/cpu-tiny --since 17:45   # only stages that started at or after 17:45 today
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

from csc_hf.run_layout import DONE, FORECAST, STAGES, WORKERS


def stage_rows(run: Path) -> tuple[str | None, list[dict]]:
    """The forecast's machine and a row per finished stage with a forecast, in the order the stages started."""
    path = run / WORKERS / FORECAST
    if not path.is_file():
        raise SystemExit(f"{path}: no forecast in this run folder (a run with --no-estimate makes none)")
    shared = json.loads(path.read_text(encoding="utf-8"))
    machine, forecast = (shared.get("machine"), shared["stages"]) if "stages" in shared else (None, shared)
    rows = []
    for name, seconds in forecast.items():
        marker = run / STAGES / name / DONE
        if not marker.is_file():
            continue
        done = json.loads(marker.read_text(encoding="utf-8"))
        if done.get("seconds") is None:
            continue
        end = datetime.datetime.fromtimestamp(marker.stat().st_mtime)
        rows.append(
            {
                "stage": name,
                "kind": name.split("-", 1)[0],
                "start": end - datetime.timedelta(seconds=done["seconds"]),
                "end": end,
                "forecast": float(seconds),
                "measured": float(done["seconds"]),
                "resumed": bool(done.get("earlier_seconds")),
                "cpu": done.get("cpu"),
            }
        )
    return machine, sorted(rows, key=lambda r: r["start"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run folder of csc-bench run")
    parser.add_argument("--since", help="HH:MM (today): only stages that started then or later")
    args = parser.parse_args()
    machine, rows = stage_rows(args.run)
    if args.since:
        since = datetime.datetime.combine(datetime.date.today(), datetime.time.fromisoformat(args.since))
        rows = [r for r in rows if r["start"] >= since]
    print(f"forecast made on: {machine or 'a machine it does not name'}")
    print(f"{'stage':58} {'ran':13} {'forecast s':>10} {'measured s':>10} {'ratio':>6}")
    for r in rows:
        marks = ("  resumed" if r["resumed"] else "") + (
            "  (another machine)" if machine and r["cpu"] and not machine.startswith(r["cpu"]) else ""
        )
        ran, ratio = f"{r['start']:%H:%M}-{r['end']:%H:%M}", r["measured"] / r["forecast"]
        print(f"{r['stage']:58} {ran:13} {r['forecast']:10.0f} {r['measured']:10.0f} {ratio:6.2f}{marks}")
    kinds = dict.fromkeys(r["kind"] for r in rows)
    for kind in [*kinds, "all"]:
        chosen = [r for r in rows if kind in ("all", r["kind"])]
        forecast, measured = sum(r["forecast"] for r in chosen), sum(r["measured"] for r in chosen)
        ratio = measured / forecast if forecast else float("nan")
        print(f"{kind}: {len(chosen)} stages, forecast {forecast:.0f} s, measured {measured:.0f} s, {ratio:.2f}x")


if __name__ == "__main__":
    main()
