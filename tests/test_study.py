import dataclasses
import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from csc_hf import hardware, resources
from csc_hf.benchmark.plan import AUGMENTED_COPIES
from csc_hf.cli import main
from csc_hf.files import read_predictions, write_atomic, write_predictions
from csc_hf.run_layout import DONE
from csc_hf.study import Preset, Study
from csc_hf.study import run as study_run
from csc_hf.study.progress import Progress, Stage, clock


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """The smoke preset end to end (the README's main job at its smallest size)."""
    run_dir = tmp_path_factory.mktemp("runs") / "smoke"
    assert main(["run", "--preset", "smoke", "--output", str(run_dir)]) == 0
    return run_dir


def test_smoke_run_writes_every_result(smoke_run):
    preset = Preset.load("smoke")
    results = json.loads((smoke_run / "results.json").read_text())
    records = results["records"]
    stages = results["stages"]  # every finished stage of the plan, with its kind, wall time and machine
    assert [s["kind"] for s in stages.values()][:2] == ["build", "pretrain"] and results["processes"] == 1
    assert all(s["seconds"] > 0 and s["cpu"] == hardware.describe() for s in stages.values())
    assert {s["kind"] for s in stages.values()} == {"build", "pretrain", "train", "evaluate", "augment"}
    assert "## Time" in (smoke_run / "report.md").read_text(encoding="utf-8")
    evaluations = [name for name, s in stages.items() if s["kind"] == "evaluate"]
    augmented = [name for name in evaluations if "-augmented-" in name]
    of_sets = [name for name in evaluations if "-set-" in name]
    sets = preset.training_sets_study
    assert len(of_sets) == sum(len(sets.variants_of(name)) for name in sets.sets) * len(preset.seeds)
    assert len(evaluations) - len(augmented) - len(of_sets) == len(preset.variants) * len(preset.seeds)
    assert len(augmented) == len(preset.augmentation_study.variants) * len(preset.seeds)
    models = {r["model"] for r in records}
    assert models == set(preset.variants)
    per_model = {(r["config"], r["split"]) for r in records if r["model"] == "bert"}
    assert {("unseen_k", "test"), ("scontext", "test"), ("clean", "test"), ("probs", "pe20")} <= per_model
    for r in records:
        s = r["scores"]
        assert (
            0.0 <= s["char_cor_f1"] <= 1.0 and s["char_cor_f1_ci_low"] <= s["char_cor_f1"] <= s["char_cor_f1_ci_high"]
        )
        assert r["keep_bias"] in preset.keep_bias_grid
    header = (smoke_run / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:6] == ["model", "seed", "config", "split", "error_prob", "keep_bias"] and "char_cor_f1" in header
    assert "sentences_per_s" in header and all(r["sentences_per_s"] > 0 for r in records)  # throughput by every score
    paired = results["paired"]  # every model against bert on every test split, both metrics
    assert {(e["model"], e["baseline"]) for e in paired} == {(m, "bert") for m in preset.variants if m != "bert"}
    assert len(paired) == 2 * (len(preset.variants) - 1) * len({(r["config"], r["split"]) for r in records})
    assert all(e["ci_low"] <= e["delta"] <= e["ci_high"] and 0 < e["p_value"] <= 1 for e in paired)
    kept = [p.parent.name for p in (smoke_run / "stages").glob("eval-*/paired-eval-*.json")]
    assert len([name for name in kept if "-augmented-" not in name and "-set-" not in name]) == len(preset.variants) - 1
    report = (smoke_run / "report.md").read_text()
    assert "## Paired comparisons" in report and "### Character-level correction F1 against bert" in report
    for conclusion in (
        "Fusing phonetic and graphic information helps",
        "sensitive to the error distribution",
        "contexts have been seen matters",
        "character-level metric is more stable",
    ):
        assert conclusion in report
    assert list((smoke_run / "report_plots").glob("*.png"))


def test_smoke_run_tests_sighan_credibility(smoke_run):
    """The augmentation stage: bert trained once more with augmentation data added (its training sentences again,
    corrupted with SIGHAN-2013's set less its leaks) for as many epochs, compared with the grid's bert on SIGHAN-15
    and the controlled test sets; the plain model is the grid's own."""
    study = Preset.load("smoke").augmentation_study
    augmentation = json.loads((smoke_run / "results.json").read_text())["augmentation"]
    leaks = augmentation["leaks"]
    assert augmentation["confusion"] == "sighan13" and leaks["removed_unseen_k"] > 0 and leaks["removed_unseen_v"] > 0
    assert leaks["kept"] == leaks["pairs"] - leaks["removed_unseen_k"] - leaks["removed_unseen_v"]
    coverage = augmentation["coverage"]
    assert set(coverage) == set(study.tests)
    assert coverage["sighan15"]["augmented"]["error_coverage"] > coverage["sighan15"]["S_train"]["error_coverage"] > 0.3
    assert (
        coverage["unseen_k"]["augmented"]["error_coverage"] == coverage["unseen_v"]["augmented"]["pair_coverage"] == 0
    )
    assert {(r["model"], r["seed"], r["config"]) for r in augmentation["records"]} == {
        ("bert", 0, t) for t in study.tests
    }
    assert {(e["config"], e["metric"]) for e in augmentation["paired"]} == {
        (t, m) for t in study.tests for m in ("char_cor_f1", "sent_cor_f1")
    }
    for e in augmentation["paired"]:
        plain = next(
            r
            for r in json.loads((smoke_run / "results.json").read_text())["records"]
            if (r["model"], r["config"], r["split"]) == ("bert", e["config"], e["split"])
        )
        assert e["b"] == pytest.approx(plain["scores"][e["metric"]])  # the grid's bert is the plain model
    trainings = sorted(
        (d for d in (smoke_run / "stages").glob("train-bert-seed0-*") if "-set-" not in d.name),
        key=lambda d: "-augmented-" in d.name,
    )
    assert len(trainings) == 2  # the plain one, trained once
    plain, augmented = (yaml.safe_load((d / "train_config.yaml").read_text()) for d in trainings)
    assert augmented["bench_params"]["augmentation"] == "sighan13" and "augmentation" not in plain["bench_params"]
    for key in ("max_steps", "warmup_steps"):  # as many epochs over twice the rows
        assert augmented[key] == AUGMENTED_COPIES * plain[key] == 2 * Preset.load("smoke").finetune[key]
    report = (smoke_run / "report.md").read_text()
    section = report.split("## SIGHAN's credibility (conclusion 4b)")[1]
    assert section.lstrip().startswith("**These numbers mean nothing") and "| sighan15 |" in section


def test_smoke_run_trains_bart_with_missing_and_redundant_characters(smoke_run):
    """The training set `edits` (bart only): bart trained once more, as many steps, on a train split with missing and
    redundant characters, scored on every test set (keeping its insertions and deletions on the length-changing ones)
    and compared (paired) with the grid's bart; the report says which model handles which edit kind."""
    preset = Preset.load("smoke")
    sets = preset.training_sets_study
    assert sets.variants_of("edits") == ("bart",) and sets.variants_of("pe20") == ("bert",)
    results = json.loads((smoke_run / "results.json").read_text())
    stage = results["training_sets"]
    assert stage["sets"]["edits"] == {"train_edit_shares": [0.5, 0.25, 0.25]}
    assert stage["set_variants"] == {"edits": ["bart"]}
    edits = [r for r in stage["records"] if r["training_set"] == "edits"]
    assert {(r["model"], r["seed"]) for r in edits} == {("bart", 0)}
    assert {r["config"] for r in edits} == set(preset.tests)
    grid = {(r["model"], r["config"], r["split"]): r for r in results["records"]}
    against_grid = [e for e in stage["paired"] if e["training_set"] == "edits" and e["against"] == "grid"]
    assert {e["model"] for e in against_grid} == {"bart"} and {e["config"] for e in against_grid} >= {"mixed", "test"}
    for e in against_grid:  # the plain model is the grid's bart
        assert e["b"] == pytest.approx(grid["bart", e["config"], e["split"]]["scores"][e["metric"]])
    for r in edits:
        aligned = r["config"] in ("missing", "redundant", "mixed")
        assert r["edit_kinds"] == (["substitution", "missing", "redundant"] if aligned else ["substitution"])
        assert ("missing_char_cor_r" in r["scores"]) == aligned
    assert grid["bert", "mixed", "test"]["edit_kinds"] == ["substitution"]  # a tagging model
    assert grid["bart", "mixed", "test"]["edit_kinds"] == ["substitution", "missing", "redundant"]
    plain, trained = (
        next((smoke_run / "stages").glob(f"train-bart-seed0-{suffix}"))
        for suffix in ("[0-9a-f]" * 12, "set-edits-*")  # the key alone: the plain stage
    )
    plain, trained = (yaml.safe_load((d / "train_config.yaml").read_text()) for d in (plain, trained))
    assert trained["bench_params"]["train_edit_shares"] == [0.5, 0.25, 0.25]
    assert "train_edit_shares" not in plain["bench_params"] and trained["max_steps"] == plain["max_steps"]
    evaluation = next((smoke_run / "stages").glob("eval-train-bart-seed0-set-edits-*"))
    from csc_hf import load_dataset

    mixed = load_dataset("csc_bench", "mixed", split="test", **preset.bench_params)
    predictions = read_predictions(evaluation / "predictions" / "mixed.test.txt", mixed["source"])
    assert len(predictions) == len(mixed)  # insertions and deletions read back
    report = (smoke_run / "report.md").read_text()
    section = report.split("## Missing and redundant characters")[1].split("\n## ")[0]
    assert "| bert | no (tagging) |" in section and "| bart | yes |" in section
    assert "| bart (set edits) | yes |" in section and "mixed: redundant recall" in section
    assert "`edits` (bart only): train_edit_shares = [0.5, 0.25, 0.25]" in report


def test_rerun_skips_finished_stages(smoke_run, caplog):
    before = (smoke_run / "results.json").read_bytes()
    decoding = Study(Preset.load("smoke"), smoke_run).folders("bert", 0)[0] / "csc_decoding.json"
    scored = decoding.read_text(encoding="utf-8")
    decoding.write_text('{"keep_bias": 7.0}', encoding="utf-8")  # as another evaluation of the model would leave it
    assert main(["run", "--preset", "smoke", "--output", str(smoke_run)]) == 0
    assert decoding.read_text(encoding="utf-8") == scored and "restored csc_decoding.json" in caplog.text
    n = planned(smoke_run)
    assert f"{n} stages, {n} finished" in caplog.text  # the log: progress goes to the csc_hf logger, not stdout
    assert "train bert" not in caplog.text and "pretrain" not in caplog.text
    assert (smoke_run / "results.json").read_bytes() == before


def test_a_moved_run_folder_keeps_its_stages(smoke_run, tmp_path, caplog):
    moved = tmp_path / "moved"
    shutil.copytree(smoke_run, moved)
    assert main(["run", "--preset", "smoke", "--output", str(moved)]) == 0
    assert f"{planned(moved)} stages, {planned(moved)} finished" in caplog.text and "train " not in caplog.text
    assert sorted(p.name for p in (moved / "stages").iterdir()) == sorted(
        p.name for p in (smoke_run / "stages").iterdir()
    )


def test_a_run_resumed_on_other_data_is_an_error_before_any_work(smoke_run, tmp_path, monkeypatch, caplog):
    """The build stage records what the data was built from (input files, the glyph font, pypinyin, the code): a
    resumed run whose data would be built from other inputs stops before any stage, since its finished stages would
    be taken as done beside models of the new data; other csc_hf code is a warning."""
    import csc_hf.confusion as confusion_mod

    moved = tmp_path / "moved"
    shutil.copytree(smoke_run, moved)
    study = Study(Preset.load("smoke"), moved)
    build = moved / "stages" / study.directory(*study._build_inputs()).name / "done.json"
    marker = json.loads(build.read_text(encoding="utf-8"))
    assert marker["inputs"]["characters"]["glyph_font"]["sha256"] and marker["code_hash"]
    font = {**marker["inputs"]["characters"]["glyph_font"], "sha256": "0" * 64}
    files = {path: path.stat().st_mtime_ns for path in moved.rglob("*") if path.is_file()}
    with monkeypatch.context() as m:
        m.setattr(confusion_mod, "default_font_record", lambda: font)
        with pytest.raises(ValueError, match=rf"{moved} was built from other data .*: its input characters differs"):
            study.run()
    assert {path: path.stat().st_mtime_ns for path in moved.rglob("*") if path.is_file()} == files  # nothing ran
    build.write_text(json.dumps({**marker, "code_hash": "0" * 16}), encoding="utf-8")
    assert main(["run", "--preset", "smoke", "--output", str(moved)]) == 0
    assert f"{moved} was built by other csc_hf code (0000000000000000" in caplog.text
    assert f"{planned(moved)} stages, {planned(moved)} finished" in caplog.text and "train " not in caplog.text


def test_saved_models_load_and_correct(smoke_run, capsys):
    model_dir = Study(Preset.load("smoke"), smoke_run).folders("bert", 0)[0]
    assert main(["correct", str(model_dir), "我们今天去学校。", "abc 123"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines[-2]) == len("我们今天去学校。") and lines[-1] == "abc 123"
    assert (
        main(
            [
                "push",
                str(model_dir),
                "user/csc-smoke",
                "--results",
                str(smoke_run / "results.json"),
                "--folder",
                str(smoke_run / "hub"),
            ]
        )
        == 0
    )
    card = (smoke_run / "hub" / "README.md").read_text()
    assert "| unseen_k/test |" in card and (smoke_run / "hub" / "config.json").is_file()
    records = json.loads((smoke_run / "results.json").read_text())["records"]
    own = [r for r in records if r["model"] == "bert" and r["seed"] == 0 and "augmentation" not in r]
    assert len(own) < len(records) and f"({len(own)} scored test sets in its card)" in capsys.readouterr().out
    # the augmentation stage's and a training set's bert (seed 0 too) get their own records, not the grid's
    results = json.loads((smoke_run / "results.json").read_text())
    study = Study(Preset.load("smoke"), smoke_run)
    augmented = results["augmentation"]["records"]
    training_set = next(r["training_set"] for r in results["training_sets"]["records"] if r["model"] == "bert")
    of_set = [
        r for r in results["training_sets"]["records"] if (r["model"], r["training_set"]) == ("bert", training_set)
    ]
    for stage, folder, group in (
        ("augmentation", study.folders("bert", 0, augmented=True)[0], augmented),
        ("training_sets", study.folders("bert", 0, training_set=training_set)[0], of_set),
    ):
        hub_dir = smoke_run / f"hub-{stage}"
        assert (
            main(
                ["push", str(folder), "user/x", "--results", str(smoke_run / "results.json"), "--folder", str(hub_dir)]
            )
            == 0
        )
        assert f"({len(group)} scored test sets in its card)" in capsys.readouterr().out
        test = next(r for r in group if r["config"] == "test")["scores"]["char_cor_f1"]
        card = (hub_dir / "README.md").read_text()
        assert f"| {test:.3f} [" in next(line for line in card.splitlines() if line.startswith("| test/test |"))


def test_part_of_the_grid_reuses_the_stages_and_keeps_every_result(smoke_run, capsys, caplog):
    """A part of the grid (``--variants plome``) in a run folder with the whole grid trains nothing and leaves the
    results of every finished model: results.json and report.md stay as they were."""
    before = {name: (smoke_run / name).read_bytes() for name in ("results.json", "results.csv", "report.md")}
    assert main(["run", "--preset", "smoke", "--output", str(smoke_run), "--variants", "plome"]) == 0
    assert main(["run", "--preset", "smoke", "--output", str(smoke_run), "--variants", "bert", "--seeds", "0"]) == 0
    assert "finished: resuming" in caplog.text and "train " not in caplog.text
    assert {name: (smoke_run / name).read_bytes() for name in before} == before
    assert main(["run", "--preset", "smoke", "--output", str(smoke_run), "--variants", "bertt"]) == 2
    assert "unknown variants ['bertt']" in capsys.readouterr().err
    grid = ["--variants", "bert", "bert+pinyin_gru", "--seeds", "0", "1"]
    stages = sorted((smoke_run / "stages").iterdir())
    assert main(["run", "--preset", "smoke", "--output", str(smoke_run), *grid, "--finished-only"]) == 0
    out = caplog.text  # nothing trained: the results are those of the finished models
    assert "skipping bert+pinyin_gru (seed 0)" in out and "skipping bert (seed 1)" in out and "train " not in out
    assert (smoke_run / "results.json").read_bytes() == before["results.json"]
    assert sorted((smoke_run / "stages").iterdir()) == stages  # running nothing, it made no stage folder


def test_processes_sharing_a_run_each_end_with_every_seed(smoke_run, tmp_path, caplog):
    """The README's recipe: one process per seed. When the seed-0 process ends after the seed-1 process, its
    results still hold seed 1 (here seed 1 of bert and bart is faked as a copy of seed 0's stages)."""
    run = tmp_path / "shared"
    shutil.copytree(smoke_run, run)
    study = Study(Preset.load("smoke"), run)
    for variant in ("bert", "bart"):
        for source, copy in zip(study.folders(variant, 0), study.folders(variant, 1)):
            shutil.copytree(source, copy)
        records = json.loads((copy / "records.json").read_text(encoding="utf-8"))
        (copy / "records.json").write_text(json.dumps([{**r, "seed": 1} for r in records]), encoding="utf-8")
    assert main(["run", "--preset", "smoke", "--output", str(run), "--seeds", "0"]) == 0
    assert "finished: resuming" in caplog.text and "train " not in caplog.text
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    models = list(dict.fromkeys((r["model"], r["seed"]) for r in results["records"]))
    assert models == [(v, 0) for v in Preset.load("smoke").variants] + [("bert", 1), ("bart", 1)]
    assert {(e["model"], e["seed"]) for e in results["paired"]} >= {("bart", 0), ("bart", 1)}
    evaluations = [name for name, s in results["stages"].items() if s["kind"] == "evaluate"]
    assert len([name for name in evaluations if "-augmented-" not in name and "-set-" not in name]) == 6
    assert "seeds 0, 1;" in (run / "report.md").read_text(encoding="utf-8")


def test_workers_take_the_forecast_of_the_process_that_started_them(tmp_path):
    """The first process shares its forecast of each stage in the run folder before it starts its workers, and a
    worker's ETA takes it, so the two progress lines agree; a worker without one has none."""
    first, worker = (Study(Preset.load("smoke"), tmp_path / "run", processes=2, worker=w) for w in (False, True))
    assert worker.shared_forecast() == {}
    first.progress = Progress(first.plan(first.grid()), processes=2)
    first.progress.forecast = {step.directory: 10.0 * k for k, step in enumerate(first.progress.plan)}
    first.share_forecast()
    assert worker.shared_forecast() == first.progress.forecast
    worker.progress = Progress(worker.plan(worker.grid()), processes=2, forecast=worker.shared_forecast())
    assert worker.progress.eta() == first.progress.eta()


@pytest.fixture
def probes(monkeypatch) -> list[dict]:
    """`StepProbe.measure` faked (0.5 s per pretraining step; variant k of a probe, k + 1 s per step and sentence) and
    recorded (its options, one entry per probe: the call that times the pretraining alone with every thread, where
    the models' processes have fewer, is left out), and the training sentences the probe reads faked: a study's forecast
    (`_forecast`) without a build's datasets."""
    from csc_hf import job_estimate

    made = []

    def measure(model, vocab_size, variants, **options):
        if variants:
            made.append(options)
        timed = {v: 1.0 + k for k, v in enumerate(variants)}
        return job_estimate.StepProbe("fp32 (AVX2)", "fp32", 1, 0.5, timed, timed)

    monkeypatch.setattr(job_estimate.StepProbe, "measure", staticmethod(measure))
    monkeypatch.setattr(study_run, "load_dataset", lambda *args, **kwargs: None)
    monkeypatch.setattr(study_run, "columns", lambda dataset, *names: (["今天天气很好"] * 10,))
    return made


def _forecast(preset: Preset, run: Path, earlier: Path | None = None, processes: int = 2) -> Study:
    """A study of ``preset`` in ``run`` (a faked build) after its start's forecast (``earlier``: the run that handed
    itself over to it), shared as a run shares it."""
    study = Study(preset, run, processes=processes, forecast_from=earlier)
    plan = study.plan(study.grid())
    study.progress = Progress(plan, processes=processes)
    (build,) = [Stage(step.directory) for step in plan if step.kinds[-1] == "build"]
    sizes = {"train": {"train": 10, "validation": 100}, "test": {"test": 100}}
    write_atomic(build.directory / DONE, json.dumps({"configs": sizes}), make_parents=True)
    study.progress.forecast = study.forecast(plan, build)
    study.share_forecast()
    return study


def test_a_resumed_run_takes_the_step_times_of_its_start_where_the_machine_is_the_same(
    tmp_path, monkeypatch, caplog, probes
):
    """The step times are saved with the machine they were probed on (CPU, threads, processes): a run resumed there
    takes them instead of probing again, and so the same forecast; a start without a forecast (``--no-estimate``)
    keeps them; a run with other processes, on another CPU, or beside a file that is no forecast probes again."""
    from csc_hf import hardware

    first = _forecast(Preset.load("smoke"), tmp_path / "run")
    assert len(probes) == 1 and first.progress.forecast and first.shared_forecast() == first.progress.forecast
    with caplog.at_level("INFO", logger="csc_hf"):
        resumed = _forecast(Preset.load("smoke"), tmp_path / "run")
    assert len(probes) == 1 and resumed.progress.forecast == first.progress.forecast
    assert "the step times of an earlier probe of the same steps on this machine" in caplog.text
    quiet = Study(Preset.load("smoke"), tmp_path / "run", processes=2)
    quiet.progress = Progress(quiet.plan(quiet.grid()), processes=2)
    quiet.share_forecast()  # a start with --no-estimate: no forecast, the step times stay
    assert quiet.shared_forecast() == {}
    assert _forecast(Preset.load("smoke"), tmp_path / "run").progress.forecast == first.progress.forecast
    assert len(probes) == 1
    _forecast(Preset.load("smoke"), tmp_path / "run", processes=1)
    assert len(probes) == 2
    monkeypatch.setattr(hardware, "describe", lambda: "AMD EPYC (family 25, model 1), 2 usable CPUs")
    _forecast(Preset.load("smoke"), tmp_path / "run", processes=1)
    assert len(probes) == 3
    (tmp_path / "run" / "workers" / "forecast.json").write_text("{", encoding="utf-8")
    with caplog.at_level("WARNING", logger="csc_hf"):
        _forecast(Preset.load("smoke"), tmp_path / "run", processes=1)
    assert len(probes) == 4 and "forecast.json: not a forecast" in caplog.text


def test_a_smaller_preset_takes_the_step_times_of_the_probe_that_timed_its_steps(tmp_path, probes):
    """The preset a run hands itself over to trains other stages (here: twice the pretraining steps, other learning
    rates, fewer variants), but where its steps are the ones the first run timed (the same sizes, batches,
    precision, threads and `TIMED_KEYS`), its forecast takes those step times instead of probing again: both
    forecasts rest on one draw. A key that changes what a step computes (the attention kernel) makes it probe."""
    base = Preset.load("smoke")
    first = _forecast(base, tmp_path / "run")
    assert len(probes) == 1 and first.probe["steps"]["pretrain_step"] == 0.5
    smaller = tmp_path / "grid.yaml"
    keys = {"augmentation": {}, "training_sets": {}, "variants": ["bert", "plome"]}
    recipe = {"pretrain": {**base.pretrain, "max_steps": 80}, "finetune": {**base.finetune, "learning_rate": 1e-4}}
    smaller.write_text(yaml.safe_dump({"base": "smoke", **keys, **recipe}), encoding="utf-8")
    handed = _forecast(Preset.load(str(smaller)), tmp_path / "grid", tmp_path / "run")
    grid, seconds = handed.progress.forecast, first.progress.forecast
    assert len(probes) == 1 and not {d.name for d in grid} & {d.name for d in seconds}  # no probe; other stages
    pretrain = [grid[s.directory] for s in handed.progress.plan if s.kinds[-1] == "pretrain"]
    assert pretrain == [80 * 0.5] and handed.probe == first.probe
    other = tmp_path / "other.yaml"  # another attention kernel: other steps
    recipe["finetune"]["attn_implementation"] = "sdpa"
    other.write_text(yaml.safe_dump({"base": "smoke", **keys, **recipe}), encoding="utf-8")
    _forecast(Preset.load(str(other)), tmp_path / "other", tmp_path / "run")
    assert len(probes) == 2 and probes[-1]["finetune_keys"]["attn_implementation"] == "sdpa"


def _with_pretrained_stages(smoke_run: Path, run: Path) -> None:
    """Copy the smoke run's build and pretraining stages into ``run``: a run there starts at the models' stages."""
    for name in ("build", "pretrain"):
        for stage in (smoke_run / "stages").glob(f"{name}-*"):
            shutil.copytree(stage, run / "stages" / stage.name)


def _record_started(monkeypatch) -> list[list[str]]:
    """The commands of the processes the study starts from now on (they still start), in order."""
    started, popen = [], study_run.subprocess.Popen
    monkeypatch.setattr(
        study_run.subprocess, "Popen", lambda command, **kw: started.append(command) or popen(command, **kw)
    )
    return started


def test_processes_share_the_models_of_one_run(smoke_run, tmp_path, caplog):
    """``processes: 2`` (or ``--processes 2``): once the encoder is pretrained, a second ``csc-bench run`` of the same
    grid and preset joins the run folder with half of the threads, the stage locks share the models out, and the run
    ends, with the results of every model, after the other process has exited (its log under ``workers/``)."""
    run = tmp_path / "two"
    _with_pretrained_stages(smoke_run, run)  # the two processes share only the models
    preset = tmp_path / "two.yaml"  # one test config: how the stages are shared is under test, not the scores
    preset.write_text(
        yaml.safe_dump(
            {"base": "smoke", "variants": ["bert", "plome"], "tests": ["test"], "augmentation": {}, "training_sets": {}}
        ),
        encoding="utf-8",
    )
    assert Preset.load(str(preset)).processes == 1
    with caplog.at_level("INFO", logger="csc_hf"):
        assert main(["run", "--preset", str(preset), "--output", str(run), "--processes", "2", "--no-estimate"]) == 0
    assert "the models' stages: 2 processes with" in caplog.text and "worker process exited" not in caplog.text
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert list(dict.fromkeys(r["model"] for r in results["records"])) == ["bert", "plome"]
    log = (run / "workers" / "worker-1.log").read_text(encoding="utf-8")
    assert "finished: resuming after them" in log and "pretrain the encoder" not in log  # it came after it
    assert "a worker: one of 2 processes that share the models' stages" in log  # its ETA counts the shares too
    assert "the models' stages: 2 processes with" not in log  # it started no worker of its own
    assert "it/s]" not in log and "s/it]" not in log  # no progress bars in a log file
    assert Preset.load(str(run / "workers" / "two.yaml")) == Preset.load(str(preset))  # the worker's preset: the same
    with pytest.raises(ValueError, match="--processes: processes=0 must be"):
        Study(Preset.load(str(preset)), run, processes=0)
    worker = Study(Preset.load(str(preset)), run, processes=2, worker=True)
    assert worker.model_threads(1) == 1 and Study(Preset.load(str(preset)), run, processes=2).model_threads(4) == 2
    assert worker.model_threads(3) == 3  # a worker's threads are its share already
    shared = json.loads((run / "workers" / "forecast.json").read_text(encoding="utf-8"))
    assert shared == {"machine": None, "stages": {}, "probe": None}  # --no-estimate: none (and no earlier probe)
    preset.write_text(yaml.safe_dump({"base": "smoke", "processes": 0}), encoding="utf-8")
    with pytest.raises(ValueError, match="processes=0 must be"):
        Preset.load(str(preset))


def test_fresh_processes_train_each_stage_in_a_new_process_to_the_same_bytes(smoke_run, tmp_path, monkeypatch, capfd):
    """``fresh_processes``: each training stage runs in a new ``python -m csc_hf.train`` process with the study's
    threads and verbosity (its log lines, not the weights files' bars), and makes the bytes a training in the study's
    own process makes; a training that fails there fails the run, naming its config; with a launcher (which starts new
    processes already) it is an error."""
    run = tmp_path / "fresh"
    _with_pretrained_stages(smoke_run, run)  # only the model's stages run
    preset = tmp_path / "fresh.yaml"  # one test config: the training's process is under test, not the scores
    plain = {"base": "smoke", "variants": ["bert"], "tests": ["test"], "augmentation": {}, "training_sets": {}}
    bars = {"finetune": {"disable_tqdm": False}}  # how the stage is followed, not its inputs
    preset.write_text(yaml.safe_dump({**plain, **bars, "fresh_processes": True}), encoding="utf-8")
    started = _record_started(monkeypatch)
    capfd.readouterr()
    assert main(["run", "--preset", str(preset), "--output", str(run), "--no-estimate"]) == 0
    err = capfd.readouterr().err
    assert re.search(r"\] training in \S+ \(weights in fp32\)", err) and "Loading weights" not in err
    assert "step 30/30: {'loss'" in err  # the step lines, and no training bar: stderr is no terminal
    assert not re.search(r"\| \d+/30 \[", err)
    (trained,) = [c for c in started if c[1:3] == ["-m", "csc_hf.train"]]
    folder = Study(Preset.load(str(preset)), run).folders("bert", 0)[0]
    assert trained[3] == str(folder / "train_config.yaml") and Stage(folder).done
    in_process = (
        smoke_run / "stages" / folder.name
    )  # the same inputs: the same stage, trained in the smoke run's process
    assert (folder / "model.safetensors").read_bytes() == (in_process / "model.safetensors").read_bytes()
    bad = tmp_path / "bad.yaml"
    bad.write_text("task: nope\n", encoding="utf-8")
    with pytest.raises(
        RuntimeError, match=r"bad.yaml: the training's process \(python -m csc_hf.train\) exited with status 2"
    ):
        Study(Preset.load(str(preset)), run).train_in_own_process(bad)
    preset.write_text(
        yaml.safe_dump({**plain, "fresh_processes": True, "launcher": "trainer_configs/accelerate/cpu_1proc.yaml"}),
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="fresh_processes and a launcher"):
        Preset.load(str(preset))


def test_a_launcher_trains_each_stage_under_accelerate_launch_to_the_same_bytes(smoke_run, tmp_path, monkeypatch):
    """A preset's ``launcher`` (an accelerate config) trains each stage in ``accelerate launch ... -m csc_hf.train
    CONFIG``: one CPU process makes the bytes the study's own process makes; one that fails fails the run, naming its
    config and the launcher."""
    run = tmp_path / "launched"
    _with_pretrained_stages(smoke_run, run)  # only the model's stages run
    preset = tmp_path / "launched.yaml"
    launcher = {"launcher": "trainer_configs/accelerate/cpu_1proc.yaml"}  # one test config: the launch is under test
    plain = {"base": "smoke", "variants": ["bert"], "tests": ["test"], "augmentation": {}, "training_sets": {}}
    preset.write_text(yaml.safe_dump({**plain, **launcher}), encoding="utf-8")
    started = _record_started(monkeypatch)
    assert main(["run", "--preset", str(preset), "--output", str(run), "--no-estimate"]) == 0
    (launched,) = [c for c in started if "accelerate.commands.launch" in c]
    folder = Study(Preset.load(str(preset)), run).folders("bert", 0)[0]
    assert launched[-3:] == ["-m", "csc_hf.train", str(folder / "train_config.yaml")] and Stage(folder).done
    in_process = smoke_run / "stages" / folder.name  # the same inputs: the smoke run trained it in its own process
    assert (folder / "model.safetensors").read_bytes() == (in_process / "model.safetensors").read_bytes()
    study = Study(Preset.load(str(preset)), run)
    bad = study.stage("bad", {"task": "nope"})
    with pytest.raises(RuntimeError, match=r"bad-\w+/train_config.yaml: the training's process \(accelerate launch\)"):
        study._train(bad, {"task": "nope"})
    assert not bad.done


def test_a_started_process_gets_its_time_to_stop_then_is_terminated():
    """How the study stops a worker or a training's process it started: one that exits within the time given keeps
    its own exit status; one that does not is terminated."""
    quick = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    study_run._stop(quick, 60.0)
    assert quick.returncode == 0
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    study_run._stop(stuck, 0.0)
    assert stuck.returncode == -signal.SIGTERM


def test_pretrained_side_encoders_start_the_variants_with_sources(smoke_run, tmp_path, caplog):
    """``pretrain_sides``: one stage pretrains the encoders of every source the preset's variants fuse, over the
    pretrained masked LM (reused), and each variant with sources starts from it in a stage of its own; a variant
    without sources keeps the preset's stage."""
    run = tmp_path / "sides"
    shutil.copytree(smoke_run, run)
    preset = tmp_path / "sides.yaml"
    recipe = {**Preset.load("smoke").pretrain, "max_steps": 6, "mask_replace_prob": 1.0, "random_replace_prob": 0.0}
    preset.write_text(yaml.safe_dump({"base": "smoke", "pretrain_sides": recipe}), encoding="utf-8")
    before = set((run / "stages").iterdir())
    assert main(["run", "--preset", str(preset), "--output", str(run), "--variants", "bert"]) == 0
    assert set((run / "stages").iterdir()) == before  # bert has no sources: nothing to pretrain, its stage as it was
    assert main(["run", "--preset", str(preset), "--output", str(run), "--variants", "bert", "pinyin+glyph_gate"]) == 0
    new = sorted(p.name for p in set((run / "stages").iterdir()) - before)
    assert [re.sub(r"-[0-9a-f]{12}", "", name) for name in new] == [
        "eval-train-pinyin_glyph_gate-seed0",
        "pretrain-sides",
        "train-pinyin_glyph_gate-seed0",
    ]
    sides = run / "stages" / new[1]
    config = yaml.safe_load((sides / "train_config.yaml").read_text(encoding="utf-8"))
    pretrained = next(p for p in before if p.name.startswith("pretrain-"))
    assert config["task"] == "sides" and config["init_from"] == str(pretrained)
    assert config["model_overrides"] == {"sources": ["pinyin_gru", "stroke_gru", "glyph_cnn"]}  # smoke's variants'
    record = json.loads((run / "stages" / new[2] / "csc_training.json").read_text(encoding="utf-8"))
    assert record["init_sides_from"] == str(sides)
    assert "pretrain the side encoders (pinyin_gru, stroke_gru, glyph_cnn; 6 steps)" in caplog.text
    assert "side encoders' pretraining" in caplog.text  # the forecast timed a step of it: its ETA is a forecast
    assert re.search(r"pretrain the side encoders \(.*\) · elapsed \S+ · ETA ~", caplog.text)
    assert "train bert" not in caplog.text  # bert has no sources: the smoke run's model


def test_finished_only_on_an_empty_run_is_an_error(tmp_path, capsys):
    assert main(["run", "--preset", "smoke", "--output", str(tmp_path / "empty"), "--finished-only"]) == 2
    assert "has not finished" in capsys.readouterr().err


def test_predictions_round_trip_as_edits(tmp_path):
    sources, predictions = ["我门去学校", "abc", ""], ["我们去学校", "abc", ""]
    path = tmp_path / "p" / "test.test.txt"
    write_predictions(path, sources, predictions)
    assert path.read_text(encoding="utf-8") == "1:们\n\n\n"
    assert read_predictions(path, sources) == predictions
    with pytest.raises(ValueError, match="3 lines for 2 sentences"):
        read_predictions(path, sources[:2])
    path.write_text("9:们\n\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"test.test.txt, line 1: bad edit '9:们'"):
        read_predictions(path, sources)
    indels = ["我们们去学校", "我们去学校了", "的的确确", "我们去学校"]
    changed = ["我们去学校", "我们去学", "的确", "我们去学校"]
    write_predictions(path, indels, changed)  # missing and redundant characters: insertions and deletions
    assert path.read_text(encoding="utf-8") == "2-们\n4-校 5-了\n1-的 2-确\n\n"
    assert read_predictions(path, indels) == changed
    write_predictions(path, ["我去学", "学"], ["我们去学校", "学校了"])
    assert path.read_text(encoding="utf-8") == "1+们 3+校\n1+校 1+了\n"
    assert read_predictions(path, ["我去学", "学"]) == ["我们去学校", "学校了"]
    for line, message in (
        ("2+们 1:们", "edit '1:们' is out of source order"),
        ("1:们 1+们", "edit '1\\+们' is out of source order"),
        ("1:们 1-去", "edit '1-去' is out of source order"),
        ("1-们", "edit '1-们' removes '们', but the source has '去'"),
        ("4+们", "bad edit '4\\+们': its sentence has 3 characters"),
        ("3-们", "bad edit '3-们': its sentence has 3 characters"),
    ):
        path.write_text(line + "\n", encoding="utf-8")
        with pytest.raises(ValueError, match=f"line 1: {message}"):
            read_predictions(path, ["我去学"])
    path.write_text("3+们\n", encoding="utf-8")
    assert read_predictions(path, ["我去学"]) == ["我去学们"]  # an insertion at the end
    path.write_text(
        "1:们 x:们\n\n\n", encoding="utf-8"
    )  # what the writer never writes (nor score's edits format reads)
    with pytest.raises(ValueError, match=r"line 1: expected position:character edits separated by spaces, got '1:们 x"):
        read_predictions(path, sources)
    with pytest.raises(ValueError, match="prediction 0 puts in or removes whitespace"):
        write_predictions(path, ["我门"], ["我 "])
    with pytest.raises(ValueError, match="prediction 0 puts in or removes whitespace"):
        write_predictions(path, ["我 们"], ["我们"])


def test_bad_presets_fail_before_training(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("variants: [bert, bertt]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"unknown variants \['bertt'\]"):
        Preset.load(str(bad))
    bad.write_text("variant: [bert]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"unknown keys \['variant'\]"):
        Preset.load(str(bad))
    bad.write_text("tests: [unseen]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"tests: unknown test config 'unseen'; choose from test, "):
        Preset.load(str(bad))
    bad.write_text("augmentation: {variants: [bertt]}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.yaml: augmentation: unknown variants \['bertt'\]"):
        Preset.load(str(bad))
    bad.write_text("tests: [test, sighan15]\naugmentation: {confusion: s.json, variants: [bert]}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"augmentation: tests \['unseen_k', 'unseen_v', 'scontext'\] are not among"):
        Preset.load(str(bad))
    for sets, message in (
        ("{edits: {train_edit_shares: [0.5, 0.25, 0.25]}}", r"training_sets: edits: bench_params: train_edit_shares="),
        ("{edits: {train_edit_shares: [0.5, 0.5]}}", r"training_sets: edits: train_edit_shares=\[0.5, 0.5\]: give 3"),
        ("{edits: {train_edit_shares: [0.5, 0.25, 0.25], variants: [bertt]}}", r"edits: unknown variants \['bertt'\]"),
        ("{edits: {variants: [bart]}}", "training_sets: edits: give the parameters it changes"),
    ):
        bad.write_text(f"training_sets: {{variants: [bert], sets: {sets}}}\n", encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            Preset.load(str(bad))
    with pytest.raises(FileNotFoundError, match="preset 'nope' not found"):
        Preset.load("nope")
    bad.write_text("hours: 0\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.yaml: hours=0 must be"):
        Preset.load(str(bad))
    bad.write_text("hours: 1\nsmaller: nope\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="preset 'nope' not found"):
        Preset.load(str(bad))
    bad.write_text("smaller: cpu-tiny-grid\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.yaml: smaller='cpu-tiny-grid' without hours: give the hours"):
        Preset.load(str(bad))
    (tmp_path / "other.yaml").write_text("hours: 1\nsmaller: bad.yaml\n", encoding="utf-8")
    bad.write_text("hours: 2\nsmaller: other.yaml\n", encoding="utf-8")  # a file beside this one, as base
    with pytest.raises(ValueError, match=r"bad.yaml: smaller: the presets take each other as smaller \(bad -> other "):
        Preset.load(str(bad))
    (tmp_path / "sub").mkdir()  # an inherited smaller file is read from the folder of the preset that names it
    (tmp_path / "sub" / "base.yaml").write_text("hours: 1\nsmaller: small.yaml\n", encoding="utf-8")
    (tmp_path / "sub" / "small.yaml").write_text("base: smoke\n", encoding="utf-8")
    bad.write_text("base: sub/base.yaml\n", encoding="utf-8")
    assert Preset.load(str(bad)).smaller == str((tmp_path / "sub" / "small.yaml").resolve())
    (tmp_path / "cpu-tiny.yaml").write_text("base: cpu-tiny\n", encoding="utf-8")  # its stem is no cycle
    assert Preset.load(str(tmp_path / "cpu-tiny.yaml")).smaller == "cpu-tiny-grid"
    assert not list(tmp_path.glob("runs*"))


def _over_hours(tmp_path: Path) -> Path:
    """A preset over smoke sized for a second (any forecast is over it) whose smaller preset is smoke."""
    path = tmp_path / "over.yaml"
    path.write_text("base: smoke\nhours: 0.0003\nsmaller: smoke\n", encoding="utf-8")
    return path


def test_a_forecast_over_the_hours_hands_a_new_default_run_to_the_smaller_preset(tmp_path, caplog):
    """`Study.check_hours`: a default run (``fallback``) whose forecast is over its preset's hours raises OverHours
    while no stage after the build has begun; any other run logs it, naming the smaller preset, and goes on."""
    preset = Preset.load(str(_over_hours(tmp_path)))
    assert preset.hours == 0.0003 and preset.smaller == "smoke"
    run = Study(preset, tmp_path / "run", fallback=True)
    plan = run.plan(run.grid())
    forecast = {s.directory: 1.0 for s in plan if s.kinds[-1] in ("pretrain", "train", "evaluate")}
    run.check_hours(plan, {d: 0.01 for d in forecast})  # within the hours
    with pytest.raises(
        study_run.OverHours,
        match=r"the forecast of over here \(0:00:\d\d; times 1.2, what whole runs measured so far took over ",
    ):
        run.check_hours(plan, forecast)
    named = Study(preset, tmp_path / "run", fallback=False)
    with caplog.at_level("WARNING", logger="csc_hf"):
        named.check_hours(plan, forecast)
    assert "is over the 0.0003 hours over is sized for" in caplog.text and "(--preset smoke)" in caplog.text
    next(s for s in plan if s.kinds[-1] == "pretrain").directory.mkdir(parents=True)  # begun: it goes on
    caplog.clear()
    with caplog.at_level("WARNING", logger="csc_hf"):
        run.check_hours(plan, forecast)
    assert "is over the 0.0003 hours" in caplog.text


def test_the_default_run_takes_the_smaller_preset_where_the_forecast_is_over_its_hours(
    smoke_run, tmp_path, monkeypatch, caplog
):
    """The README's first command on a CPU slower than its default preset was sized for: the forecast after the
    build is over the preset's hours, so the run goes to the smaller preset's folder and runs that one; the first
    folder keeps its build only, and a later run of the default goes to the smaller preset's folder at once."""
    over = _over_hours(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(resources, "default_preset", lambda path=None: str(over))
    for stage in (smoke_run / "stages").glob("build-*"):  # the default's build (the same as smoke's)
        shutil.copytree(stage, tmp_path / "runs" / "over" / "stages" / stage.name)

    def forecast(self, plan, build):  # a minute per training, without timing steps
        if self.preset.name == "over":  # the smaller preset's stages, finished: as if it ran (they share stages)
            shutil.copytree(smoke_run, tmp_path / "runs" / "smoke")
        return {s.directory: 60.0 for s in plan if s.kinds[-1] == "train"}

    monkeypatch.setattr(Study, "forecast", forecast)
    with caplog.at_level("INFO", logger="csc_hf"):
        assert main(["run"]) == 0
    assert "preset: smoke instead, sized for slower CPUs: the forecast of over here (" in caplog.text
    assert "runs/over keeps its build: --preset over resumes it" in caplog.text
    assert [p.name.split("-")[0] for p in (tmp_path / "runs" / "over" / "stages").iterdir()] == ["build"]
    marker = json.loads((tmp_path / "runs" / "over" / "handed_over.json").read_text(encoding="utf-8"))
    assert marker["preset"] == "smoke" and "is over the 0.0003 hours" in marker["why"]
    results = tmp_path / "runs" / "smoke" / "results.json"
    assert json.loads(results.read_text(encoding="utf-8"))["records"]
    results.unlink()
    caplog.clear()
    with caplog.at_level("INFO", logger="csc_hf"):  # a later run of the default goes where the first went, at once
        assert main(["run", "--finished-only"]) == 0
    assert "preset: smoke, which an earlier run of over handed itself to here" in caplog.text and results.is_file()
    caplog.clear()
    with caplog.at_level("INFO", logger="csc_hf"):  # a part of the grid stays with the preset (its forecast is a part)
        assert main(["run", "--finished-only", "--seeds", "0"]) == 2  # nothing finished in runs/over
    assert "handed itself" not in caplog.text


def test_stage_keys_follow_inputs(tmp_path):
    study = Study(Preset(name="x"), tmp_path)
    assert study.stage("a", {"x": 1}).directory == study.stage("a", {"x": 1}).directory
    assert study.stage("a", {"x": 1}).directory != study.stage("a", {"x": 2}).directory


def test_a_similarity_prior_grid_changes_only_the_evaluations(tmp_path):
    preset = Preset.load("smoke")
    plain = Study(preset, tmp_path)
    tuned = Study(dataclasses.replace(preset, similarity_prior_grid=[0.0, 2.0]), tmp_path)
    model, evaluation = plain.folders("bert", 0)
    build = plain.directory("build", preset.bench_params, preset.tests)
    before = plain.directory(
        f"eval-{model.name}",
        preset.tests,
        preset.bootstrap,
        preset.keep_bias_grid,
        build.name,
        {"precision": plain._inference_precision()},
    )  # the key before the prior existed
    assert evaluation == before  # the default grid leaves earlier runs' evaluations where they are
    tuned_model, tuned_evaluation = tuned.folders("bert", 0)
    assert model == tuned_model and evaluation != tuned_evaluation


def test_bf16_weights_change_only_bf16_evaluations(tmp_path, monkeypatch):
    """``eval_bf16_weights`` adds to an evaluation's key, and reaches its Corrector, only where the evaluation computes
    in bf16: on a CPU without bf16 the stages stay those of a run without the key."""
    import csc_hf.precision

    preset = Preset.load("smoke")
    weights = dataclasses.replace(preset, eval_bf16_weights=True)
    for bf16 in (False, True):
        monkeypatch.setattr(csc_hf.precision, "cpu_has_bf16", lambda bf16=bf16: bf16)
        plain, held = Study(preset, tmp_path), Study(weights, tmp_path)
        (model, evaluation), (held_model, held_evaluation) = plain.folders("bert", 0), held.folders("bert", 0)
        assert model == held_model and (evaluation != held_evaluation) == bf16
        stage = Stage(held_evaluation)
        assert held._evaluation_options(stage, augmented=False).bf16_weights == bf16
        assert not plain._evaluation_options(stage, augmented=False).bf16_weights


def test_presets_load_and_resolve_their_launcher(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the launcher path is found in the repository from any folder
    paper = Preset.load("paper")
    assert paper.launcher.endswith("trainer_configs/accelerate/multi_gpu.yaml") and len(paper.variants) == 12
    cpu = Preset.load("cpu")
    assert cpu.launcher is None and cpu.seeds == [0, 1] and cpu.finetune["max_steps"] > 0
    for preset in (paper, cpu):  # the SIGHAN-credibility stage, for BERT and BART (the paper's model for it)
        assert preset.augmentation_study.variants == ("bert", "bart")
        sets = preset.training_sets_study  # bart with missing and redundant characters in its training data
        assert sets.variants_of("edits") == ("bart",) and sets.sets["edits"] == {"train_edit_shares": [0.5, 0.25, 0.25]}
        assert {"missing", "redundant", "mixed"} <= set(preset.tests)
    (tmp_path / "aug.json").write_text('{"天": {"夭": "graphic"}}', encoding="utf-8")
    (tmp_path / "p.yaml").write_text("augmentation: {confusion: aug.json}\n", encoding="utf-8")
    assert Preset.load("p.yaml").augmentation_study.confusion == str(tmp_path / "aug.json")  # made absolute


def test_the_default_preset_follows_the_compute_path(monkeypatch, tmp_path, caplog):
    """Without AMX the default is cpu-small, and where the kernels stop at AVX2 cpu-tiny: the cpu study, its stages,
    recipe and tests, with a smaller encoder and one seed (what fits the hours there, in bf16 on AVX512-BF16 as in
    fp32); `cpu` itself never changes with the machine, and the run says which."""
    cpu, small, tiny = Preset.load("cpu"), Preset.load("cpu-small"), Preset.load("cpu-tiny")
    assert set(resources.DEFAULT_PRESETS.values()) == {"cpu", "cpu-small", "cpu-tiny"}
    for sized in (small, tiny):  # their models: two 1-thread processes, each training in a new process
        differ = {name for name in vars(cpu) if getattr(cpu, name) != getattr(sized, name)}
        assert differ == {"name", "description", "bench_params", "seeds", "model", "pretrain", "processes",
                          "fresh_processes", "hours", "smaller"}  # fmt: skip
        assert sized.hours == 6  # where the forecast is over, a default run takes the smaller one
        assert sized.seeds == [0] and sized.fresh_processes
        assert sized.bench_params == {"n_test": 2500}  # evaluation is a third of the job in fp32
        assert sized.model["hidden_size"] % sized.model["num_attention_heads"] == 0
        assert sized.model["hidden_size"] // sized.model["num_attention_heads"] == 64  # cpu's heads, fewer of them
    assert tiny.model["hidden_size"] < small.model["hidden_size"] < cpu.model["hidden_size"]
    longer = {**cpu.pretrain, "max_steps": 2 * cpu.pretrain["max_steps"]}  # the smaller encoders pretrain twice as long
    assert small.pretrain == tiny.pretrain == longer
    for sized in (small, tiny):  # what --help says of them
        assert f"pretrained {longer['max_steps']:,} steps" in sized.description
    assert (cpu.processes, small.processes, tiny.processes) == (1, 2, 2)
    grid = Preset.load("cpu-tiny-grid")  # where cpu-tiny's forecast is over its hours: its grid, a shorter pretraining
    assert (cpu.smaller, small.smaller, tiny.smaller, grid.smaller) == (None, "cpu-tiny", "cpu-tiny-grid", None)
    differ = {name for name in vars(tiny) if getattr(tiny, name) != getattr(grid, name)}
    assert differ == {"name", "description", "pretrain", "augmentation", "training_sets", "smaller"}
    assert grid.pretrain == cpu.pretrain and grid.hours == 6 and cpu.hours is None
    assert f"pretrained {cpu.pretrain['max_steps']:,} steps" in grid.description
    for path, name in (
        ("bf16 (AMX)", "cpu"),
        ("bf16 (AVX512-BF16)", "cpu-small"),  # a Zen 4: bf16 without AMX (BENCHMARKS.md)
        ("fp32 (AVX-512)", "cpu-small"),
        ("fp32 (AVX2)", "cpu-tiny"),  # a Zen 3
        ("bf16", "cpu-small"),  # no /proc/cpuinfo: AMX unknown
        ("fp32", "cpu-small"),
    ):
        assert resources.default_preset(path) == name
    monkeypatch.setattr(hardware, "compute_path", lambda flags=None: "bf16 (AVX512-BF16)")
    output = tmp_path / "empty"
    with caplog.at_level("INFO", logger="csc_hf"):
        assert main(["run", "--output", str(output), "--finished-only"]) == 2  # nothing finished there
    assert "preset: cpu-small, the default on this CPU (compute path bf16 (AVX512-BF16)" in caplog.text


# ---- progress and logging -------------------------------------------------------------------------------------------


def planned(run_dir) -> int:
    """How many stages the smoke preset's whole run has."""
    study = Study(Preset.load("smoke"), run_dir)
    return len(study.plan(study.grid()))


def test_a_run_logs_its_progress_and_prints_only_results(smoke_run, tmp_path, capsys, caplog):
    """stdout holds the results line only; the csc_hf logger has the progress: the stages found finished, then each
    stage that runs with its position, the elapsed time and an ETA from the recorded times of finished stages of its
    kind (here, without a forecast to scale, the mean of every other evaluation's: `Progress` has the rule with one)."""
    run = tmp_path / "partial"
    shutil.copytree(smoke_run, run)
    study = Study(Preset.load("smoke"), run)
    shutil.rmtree(study.folders("plome", 0)[1])  # plome's evaluation runs again
    plan, n = study.plan(study.grid()), planned(run)
    seconds = [Stage(s.directory).seconds for s in plan if s.kinds[-1] == "evaluate" and Stage(s.directory).done]
    capsys.readouterr()
    caplog.clear()
    assert main(["run", "--preset", "smoke", "--output", str(run), "--no-estimate"]) == 0
    results = run / "results.json"
    assert capsys.readouterr().out == (f"results: {results}, {run / 'results.csv'}; report: {run / 'report.md'}\n")
    assert f"{run}: {n} stages, {n - 1} finished: resuming after them" in caplog.text
    eta, tests = clock(sum(seconds) / len(seconds)), len(Preset.load("smoke").tests)
    assert re.search(
        rf"stage {n}/{n}: evaluate plome \(seed 0\) on {tests} test configs · elapsed 0:\d\d:\d\d · ETA {eta}\n",
        caplog.text,
    ), caplog.text
    assert f"all {n} stages finished" in caplog.text
    assert all(r.name.startswith("csc_hf") for r in caplog.records if "stage" in r.getMessage())


def test_smoke_run_trains_each_training_set_and_scores_the_domains(smoke_run):
    """The training-distribution stage: bert trained once more on the P_e 20% training set, scored on every test
    set, paired against the grid's bert except on the splits made from the training set; the domain config's errors
    by group; the report's two sections."""
    preset = Preset.load("smoke")
    study = preset.training_sets_study
    results = json.loads((smoke_run / "results.json").read_text())
    stage = results["training_sets"]
    assert stage["sets"] == study.sets and stage["variants"] == list(study.all_variants)  # bert, and edits' bart
    assert {(r["model"], r["training_set"]) for r in stage["records"]} == {("bert", "pe20"), ("bart", "edits")}
    tested = {(r["config"], r["split"]) for r in stage["records"] if r["training_set"] == "pe20"}
    assert tested == {(r["config"], r["split"]) for r in results["records"] if r["model"] == "bert"}
    pe20 = [e for e in stage["paired"] if e["training_set"] == "pe20"]
    against_grid = {(e["config"], e["split"]) for e in pe20 if e["against"] == "grid"}
    assert against_grid and not {c for c, _ in against_grid} & {"seen", "scontext"}  # not the same sentences
    assert against_grid == tested - {("seen", "test"), ("scontext", "test")}
    assert all(e["ci_low"] <= e["delta"] <= e["ci_high"] for e in stage["paired"])
    domain = [e for e in results["domain_errors"] if e["config"] == "domain_hsk"]
    assert {(e["model"], e["split"]) for e in domain} == {
        (m, s) for m in preset.variants for s in ("test", "unseen_k", "unseen_v")
    }
    report = (smoke_run / "report.md").read_text()
    for e in results["domain_errors"]:
        assert all(0 <= corrected <= n for n, corrected in e["groups"].values())
    # each domain split is compared with the main split of the same controls, so those are counted too
    assert {e["config"] for e in results["domain_errors"] if not e["config"].startswith("domain_")} == {
        "test",
        "unseen_k",
        "unseen_v",
    }
    assert "| domain_hsk/unseen_k | unseen_k |" in report
    assert "## Which training distribution" in report and "## Domain shift" in report
    assert (smoke_run / "report_plots" / "train_x_test.png").is_file()
