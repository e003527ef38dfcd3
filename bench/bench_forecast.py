"""How a study run's finished stages fared against the forecast its start made (`csc-bench run`'s probe).

Reads RUN/workers/forecast.json (each stage's forecast seconds and the machine it was probed on) and each finished
stage's done.json (its wall seconds, those of earlier pieces when it resumed, and the machine it finished on), and
prints one row per finished stage that has a forecast (when it ran, its kind, forecast, measured and their ratio), then
the sums by kind and over all. A stage that finished on another machine than the forecast's, or that resumed from a
checkpoint (its time counts each piece's start again), is marked: its ratio says less about the probe.

    python bench/bench_forecast.py runs/cpu-tiny
    python bench/bench_forecast.py runs/cpu-tiny --since 17:45   # only stages that started at or after 17:45 today

With ``--log`` (the run's console output, as `csc-bench run > LOG 2>&1` kept it) it also prints the progress line's
ETA as the user saw it: for each stage line, the end it promised (the line's time plus its ETA) and, where the log
holds the run's last line, how far that was from the end.

    python bench/bench_forecast.py runs/cpu-tiny-grid --log study.log
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
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


LINE = re.compile(r"^\[csc_hf (\d\d:\d\d:\d\d)\] (.*)$")
CLOCK = r"(?:\d+ days?, )?\d+:\d\d:\d\d"  # csc_hf.study.progress.clock: str(timedelta)
STAGE = re.compile(rf"stage (\d+/\d+): .* · elapsed ({CLOCK})(?: · ETA (≥ )?(~)?({CLOCK}))?$")
FINISHED = re.compile(r"all \d+ stages finished")


def _seconds(text: str) -> int:
    days, _, time = text.rpartition(", ")
    hours, minutes, seconds = (int(part) for part in time.split(":"))
    return 86400 * int(days.split()[0] if days else 0) + 3600 * hours + 60 * minutes + seconds


def eta_rows(log: str, day: datetime.date) -> tuple[list[dict], datetime.datetime | None]:
    """Each progress line of the log ``log`` (its clock times read from ``day`` on, a day later each time the clock
    goes back) with the end its ETA promised, and the time of the run's last line (None where it has none)."""
    rows, end, previous = [], None, None
    for line in log.splitlines():
        found = LINE.match(line)
        if not found:
            continue
        at = datetime.datetime.combine(day, datetime.time.fromisoformat(found[1]))
        if previous is not None and at < previous:
            day, at = day + datetime.timedelta(days=1), at + datetime.timedelta(days=1)
        previous = at
        if FINISHED.match(found[2]):
            end = at
        elif (stage := STAGE.match(found[2])) and stage[5]:
            eta = _seconds(stage[5])
            rows.append(
                {
                    "at": at,
                    "stage": stage[1],
                    "elapsed": stage[2],
                    "eta": f"{stage[3] or ''}{stage[4] or ''}{stage[5]}",
                    "promised": at + datetime.timedelta(seconds=eta),
                }
            )
    return rows, end


FIRST_DAY = datetime.date(2000, 1, 1)  # the log's clock times have no date: days count from its first line


def _clock(at: datetime.datetime) -> str:
    days = (at.date() - FIRST_DAY).days
    return f"{at:%H:%M:%S}" + (f" +{days}d" if days else "")


def print_etas(log: Path) -> None:
    rows, end = eta_rows(log.read_text(encoding="utf-8", errors="replace"), FIRST_DAY)
    print(f"\nthe progress line's ETA ({log}): the end each stage line promised (its time + its ETA)")
    print(f"{'at':12} {'stage':7} {'elapsed':>8} {'ETA':>11} {'promised end':>13} {'against the end':>16}")
    for r in rows:
        off = "" if end is None else f"{(r['promised'] - end).total_seconds() / 60:+.0f} min"
        at, promised = _clock(r["at"]), _clock(r["promised"])
        print(f"{at:12} {r['stage']:7} {r['elapsed']:>8} {r['eta']:>11} {promised:>13} {off:>16}")
    print(f"end: {_clock(end)}" if end else "end: not in the log (the run has not finished)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run folder of csc-bench run")
    parser.add_argument("--since", help="HH:MM (today): only stages that started then or later")
    parser.add_argument("--log", type=Path, help="the run's console output: the progress line's ETA against the end")
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
    if args.log:
        print_etas(args.log)


if __name__ == "__main__":
    main()
