"""Results analysis of a ``csc-bench run`` (``RUN_DIR/results.json``), as pure functions.

:func:`analyze_results` gives a :class:`RunAnalysis`: the models x test sets tables, the false-positive rate on the
error-free test sets, the tuned decoding settings, the ranking of fusion strategies and information sources, F1
against ``P_e``, the seen/unseen gaps, the metric stability, and the paper's four conclusions, each with the
comparisons that decide its verdict (:data:`VERDICT_RULE`); with an augmentation stage, SIGHAN's credibility
(:class:`Credibility`: the paper's claim that SIGHAN test sets cannot reflect a model's performance reliably, judged by
:data:`CREDIBILITY_RULE`); on the test sets with missing and redundant characters, which model handles which edit
kind (:class:`EditKinds`; the conclusions are judged on the substitution test sets); it also says when the numbers
mean nothing (a smoke run, or every score at the floor).
:mod:`csc_hf.report` renders it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .benchmark.configs import CONFIGS, DOMAINS, SIGHAN15, domain_reference, split_name
from .benchmark.plan import BenchParams
from .edits import EDIT_KINDS, SUBSTITUTION
from .files import read_text
from .modeling import VARIANTS, is_seq2seq, variant_family
from .run_layout import RESULTS_FILE
from .scoring import REPORTED

PRIMARY = "char_cor_f1"  # the metric that decides verdicts (the paper's advice: the more stable one)
FALSE_POSITIVES = "fpr"  # the score of the error-free test sets: the share of their sentences a model changes
FLOOR = 0.05
"""Below this best character-level correction F1 (on any test set with errors) a run's numbers mean nothing."""
MEANINGLESS_PRESETS = ("smoke",)  # presets that only check that every stage runs


def load_results(run_dir: str | Path) -> dict:
    """Read and check ``RUN_DIR/results.json`` (see ``csc-bench run``)."""
    path = Path(run_dir) / RESULTS_FILE
    text = read_text(path)
    try:
        results = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}, line {err.lineno}: invalid JSON ({err.msg})") from None
    records = results.get("records") if isinstance(results, dict) else None
    if not records or not isinstance(records, list):
        raise ValueError(f"{path}: expected an object with a non-empty 'records' list")
    _check_records(path, records)
    augmentation = results.get("augmentation")
    if augmentation is not None:
        if not isinstance(augmentation, dict) or not isinstance(augmentation.get("records"), list):
            raise ValueError(f"{path}: 'augmentation' must be an object with a 'records' list")
        _check_records(path, augmentation["records"], "augmentation ")
    stage = results.get("training_sets")
    if stage is not None:
        fields = ("sets", "variants", "records", "paired")
        if not isinstance(stage, dict) or any(k not in stage for k in fields):
            raise ValueError(f"{path}: 'training_sets' must be an object with {', '.join(fields)}")
        for name in {r.get("training_set") for r in stage["records"]}:
            _check_records(path, [r for r in stage["records"] if r.get("training_set") == name], f"{name} ")
    return results


def _check_records(path: Path, records: list, where: str = "") -> None:
    """Raise a ValueError naming ``path`` and the record unless every record has its fields and the report's metrics
    and no two share model, seed and test set."""
    seen = set()
    for i, record in enumerate(records):
        fields = ("model", "seed", "config", "split", "scores")
        missing = [k for k in fields if not isinstance(record, dict) or k not in record]
        if missing:
            raise ValueError(f"{path}: {where}record {i} lacks {', '.join(missing)}")
        if not isinstance(record["scores"], dict):
            raise ValueError(f"{path}: {where}record {i}: 'scores' is not an object")
        absent = [m for m in REPORTED if not isinstance(record["scores"].get(m), (int, float))]
        if absent:
            raise ValueError(f"{path}: {where}record {i} has no score {', '.join(absent)}")
        key = (record["model"], record["seed"], record["config"], record["split"])
        if key in seen:
            raise ValueError(
                f"{path}: {where}record {i} repeats model {key[0]}, seed {key[1]} on {split_name(*key[2:])}"
            )
        seen.add(key)


@dataclass(frozen=True)
class Cell:
    """One model on one test set: its score per seed, the bootstrap interval widths, and the interval that judges
    differences (the union of the seeds' bootstrap intervals; ``None`` when the run has no intervals)."""

    values: tuple[float, ...]
    widths: tuple[float, ...]
    interval: tuple[float, float] | None

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def std(self) -> float | None:
        """The standard deviation across seeds (``None`` with one seed)."""
        return float(np.std(self.values, ddof=1)) if len(self.values) > 1 else None


def cells(records: Iterable[Mapping], metric: str) -> dict[tuple[str, str], Cell]:
    """``{(model, test set): Cell}`` of ``metric`` over the records' seeds."""
    groups: dict[tuple[str, str], list[Mapping]] = defaultdict(list)
    for record in records:
        groups[record["model"], split_name(record["config"], record["split"])].append(record["scores"])
    result = {}
    for key, scores in groups.items():
        lows = [s.get(f"{metric}_ci_low") for s in scores]
        highs = [s.get(f"{metric}_ci_high") for s in scores]
        complete = None not in lows and None not in highs
        result[key] = Cell(
            tuple(float(s[metric]) for s in scores),
            tuple(h - lo for lo, h in zip(lows, highs)) if complete else (),
            (min(lows), max(highs)) if complete else None,
        )
    return result


def model_family(name: str) -> tuple[str, tuple[str, ...]]:
    """A model's fusion and information sources (:func:`csc_hf.modeling.variant_family`); ``("other", ())`` for a
    model that is not a variant of ``csc_hf.modeling.VARIANTS``."""
    return variant_family(name) if name in VARIANTS else ("other", ())


def is_seq2seq_model(name: str) -> bool:
    """Whether the model ``name`` is a seq2seq variant (:func:`csc_hf.modeling.is_seq2seq`): it has no source logit
    to bias, nor information sources to rank."""
    return name in VARIANTS and is_seq2seq(name)


def _phonetic_and_graphic(sources: Sequence[str]) -> bool:
    return "pinyin" in sources and ("stroke" in sources or "glyph" in sources)


INFORMATION_GROUPS: dict[str, Callable[[Sequence[str]], bool]] = {
    "none": lambda s: not s,
    "+pinyin": lambda s: "pinyin" in s,
    "+stroke": lambda s: "stroke" in s,
    "+glyph": lambda s: "glyph" in s,
    "phonetic+graphic": _phonetic_and_graphic,
}
"""Information-source groups of the ranking (a model counts in every group it matches)."""


@dataclass(frozen=True)
class Comparison:
    """One piece of evidence for a conclusion: the claim expects ``a`` above ``b``.

    ``outcome``: ``expected`` (``a`` above ``b`` beyond the intervals, or by sign when there are none), ``opposite``
    (``b`` above ``a`` likewise) or ``none`` (the intervals overlap or the values are equal). ``paired``, when the
    run saved both models' predictions: the mean paired difference ``a - b`` over seeds and the union of the seeds'
    paired bootstrap intervals of it; it then decides the outcome (zero outside the interval)."""

    label: str
    a: str
    b: str
    a_value: float
    b_value: float
    a_interval: tuple[float, float] | None
    b_interval: tuple[float, float] | None
    outcome: str
    paired: tuple[float, tuple[float, float]] | None = None


Paired = dict[tuple[str, str, str, str], list[Mapping]]
"""``{(model, baseline, test set, metric): [the paired comparison of each seed]}`` from ``results.json``'s
``paired`` list."""


def paired_index(entries: Iterable[Mapping]) -> Paired:
    """Index ``results.json``'s paired comparisons (see :func:`csc_hf.evaluation.paired_comparisons`)."""
    index: Paired = defaultdict(list)
    for e in entries:
        index[e["model"], e["baseline"], split_name(e["config"], e["split"]), e["metric"]].append(e)
    return dict(index)


def paired_difference(entries: Sequence[Mapping]) -> tuple[float, tuple[float, float]]:
    """The mean paired difference over seeds and the union of the seeds' paired intervals."""
    return float(np.mean([e["delta"] for e in entries])), (
        min(e["ci_low"] for e in entries),
        max(e["ci_high"] for e in entries),
    )


def compare_cells(
    label: str, a: str, a_cell: Cell, b: str, b_cell: Cell, paired: Sequence[Mapping] | None = None
) -> Comparison:
    """Judge ``a_cell`` > ``b_cell``: by the paired interval of the difference when every seed of both cells has
    one (``paired``: one comparison per seed), else a difference counts only when the intervals do not overlap."""
    ia, ib = a_cell.interval, b_cell.interval
    outcome, difference = "none", None
    if paired and len(paired) == len(a_cell.values) == len(b_cell.values):
        difference = paired_difference(paired)
        low, high = difference[1]
        outcome = "expected" if low > 0 else "opposite" if high < 0 else "none"
    elif ia is not None and ib is not None:
        outcome = "expected" if ia[0] > ib[1] else "opposite" if ib[0] > ia[1] else "none"
    return Comparison(label, a, b, a_cell.mean, b_cell.mean, ia, ib, outcome, difference)


def compare_values(label: str, a: str, a_value: float, b: str, b_value: float) -> Comparison:
    """Judge ``a_value`` > ``b_value`` by sign."""
    outcome = "expected" if a_value > b_value else "opposite" if b_value > a_value else "none"
    return Comparison(label, a, b, a_value, b_value, None, None, outcome)


VERDICT_RULE = (
    "supported when at least half of the comparisons go the expected way and more than go the opposite way; "
    "not supported when more go the opposite way than the expected way; inconclusive otherwise (including when "
    "the run lacks the models or test sets to compare)"
)


def verdict(comparisons: Sequence[Comparison]) -> str:
    """``supported`` / ``not supported`` / ``inconclusive`` by :data:`VERDICT_RULE`."""
    return outcome_verdict([c.outcome for c in comparisons])


def outcome_verdict(outcomes: Sequence[str]) -> str:
    """:data:`VERDICT_RULE` over outcomes (``expected``, ``opposite``, ``none``)."""
    expected, opposite = outcomes.count("expected"), outcomes.count("opposite")
    if outcomes and 2 * expected >= len(outcomes) and expected > opposite:
        return "supported"
    return "not supported" if opposite > expected else "inconclusive"


CLAIMS = {
    1: "Fusing phonetic and graphic information helps.",
    2: "Models are sensitive to the error distribution of the test set.",
    3: "Whether the errors and contexts have been seen matters.",
    4: "The character-level metric is more stable than the sentence-level metric.",
}
SEEN_UNSEEN = (("seen", "unseen_k"), ("seen", "unseen_v"), ("scontext", "test"))
"""The seen/unseen contrasts (``seen`` falls back on ``test`` when the run has no ``seen`` set)."""


def _test_sets(records: Iterable[Mapping]) -> list[str]:
    """The records' test sets in the order of the config table (then of appearance)."""
    rank = {name: i for i, name in enumerate(CONFIGS)}
    names = dict.fromkeys(split_name(r["config"], r["split"]) for r in records)
    return sorted(names, key=lambda name: rank.get(name.split("/")[0], len(rank)))


@dataclass(frozen=True)
class Rank:
    """One row of a ranking: a group of models, its mean F1 per metric over the common test sets, its best model."""

    group: str
    models: list[str]
    best: str
    means: dict[str, float]


@dataclass(frozen=True)
class Conclusion:
    """One of the paper's claims: the basis of its evidence, the comparisons that decide it (character level, or
    the metrics' spread for claim 4), the sentence-level comparisons shown for reference, and the verdict."""

    claim: str
    basis: str
    comparisons: list[Comparison]
    reference: list[Comparison]
    verdict: str


@dataclass(frozen=True)
class StageTimes:
    """Where a run's time went: per kind of stage (in the order the run meets them), the finished stages and their
    summed wall time in seconds; the machines they ran on (`csc_hf.hardware.describe`) with how many stages each,
    ``None`` for stages that finished before stages recorded it; and the processes that shared the models' stages
    (the ``train`` and ``evaluate`` stages), so that the run's wall time is less than the sum."""

    kinds: dict[str, tuple[int, float]]
    machines: dict[str | None, int]
    processes: int

    @property
    def seconds(self) -> float:
        return sum(seconds for _, seconds in self.kinds.values())


def stage_times(stages: Mapping[str, Mapping], processes: int = 1) -> StageTimes | None:
    """The :class:`StageTimes` of a run's ``stages`` (``results.json``: each finished stage's ``kind``, ``seconds``
    and ``cpu``); ``None`` without any."""
    if not stages:
        return None
    kinds: dict[str, tuple[int, float]] = {}
    machines: dict[str | None, int] = {}
    for stage in stages.values():
        count, seconds = kinds.get(stage["kind"], (0, 0.0))
        kinds[stage["kind"]] = (count + 1, seconds + (stage.get("seconds") or 0.0))
        machines[stage.get("cpu")] = machines.get(stage.get("cpu"), 0) + 1
    return StageTimes(kinds, machines, processes)


@dataclass(frozen=True)
class RunAnalysis:
    """Every analysis of a run's ``results.json`` (see :func:`analyze_results`).

    Test sets are named as in tables (``unseen_k``, ``probs/pe05``); ``cells`` maps a metric to ``{(model, test
    set): Cell}``; ``false_positives`` is ``{(model, clean test set): Cell}`` of the false-positive rate;
    ``keep_bias`` and ``similarity_prior`` are ``{(model, seed): the decoding setting tuned on validation}``
    (``None`` when the results do not say); ``not_evidence`` says why the numbers mean nothing (``None`` when they
    may mean something)."""

    preset: str | None
    models: list[str]
    seeds: list[int]
    test_sets: list[str]
    error_test_sets: list[str]  # test sets with errors (F1 means something there)
    substitution_test_sets: list[str]  # of those, the ones of the paper's kind: substitutions only (the conclusions)
    clean_test_sets: list[str]  # test sets without errors (their false-positive rate does)
    common_test_sets: list[str]  # substitution test sets that every model ran
    cells: dict[str, dict[tuple[str, str], Cell]]
    false_positives: dict[tuple[str, str], Cell]
    paired: Paired
    families: dict[str, tuple[str, tuple[str, ...]]]
    ranking: dict[str, list[Rank]]
    pe_series: dict[str, float]
    seen_unseen: list[tuple[str, str]]
    pair_recall: dict[tuple[str, str], dict[str, float]]
    stability: dict[str, dict[str, float | None]]
    keep_bias: dict[tuple[str, int], float | None]
    keep_bias_grid: list[float] | None
    similarity_prior: dict[tuple[str, int], float | None]
    similarity_prior_grid: list[float] | None
    not_evidence: str | None
    conclusions: dict[int, Conclusion] = field(default_factory=dict)
    credibility: Credibility | None = None  # None: the run has no augmentation stage
    training_sets: TrainingSets | None = None  # None: the run has no training-distribution stage
    domain_drops: list[DomainDrop] = field(default_factory=list)  # empty: the run scored no domain config
    edit_kinds: EditKinds | None = None  # None: the run has no test set with missing or redundant characters
    stage_times: StageTimes | None = None  # None: the results name no finished stage


def analyze_results(results: Mapping) -> RunAnalysis:
    """Every analysis of a run's ``results.json`` (see :func:`load_results`)."""
    records = results["records"]
    table = {metric: cells(records, metric) for metric in REPORTED}
    models = list(dict.fromkeys(r["model"] for r in records))
    test_sets = _test_sets(records)
    clean = {split_name(r["config"], r["split"]) for r in records if r["scores"].get("n_errors", 1) == 0}
    with_errors = [t for t in test_sets if t not in clean]
    substitutions = [t for t in with_errors if not changes_length(t)]
    common = [t for t in substitutions if all((m, t) in table[PRIMARY] for m in models)]
    families = {m: model_family(m) for m in models}
    params = results.get("params") if isinstance(results.get("params"), Mapping) else {}
    analysis = RunAnalysis(
        preset=results.get("preset"),
        models=models,
        seeds=sorted({r["seed"] for r in records}),
        test_sets=test_sets,
        error_test_sets=with_errors,
        substitution_test_sets=substitutions,
        clean_test_sets=[t for t in test_sets if t in clean],
        common_test_sets=common,
        cells=table,
        false_positives=cells(
            [r for r in records if split_name(r["config"], r["split"]) in clean and FALSE_POSITIVES in r["scores"]],
            FALSE_POSITIVES,
        ),
        paired=paired_index(results.get("paired", [])),
        families=families,
        ranking=_rankings(table, families, common),
        pe_series=_pe_series(records),
        seen_unseen=_seen_unseen_sets(test_sets),
        pair_recall=_pair_recall(records),
        stability=_stability(table, substitutions),
        keep_bias=_decoding(records, "keep_bias"),
        keep_bias_grid=params.get("keep_bias_grid"),
        similarity_prior=_decoding(records, "similarity_prior"),
        similarity_prior_grid=params.get("similarity_prior_grid"),
        not_evidence=_not_evidence(results.get("preset"), table[PRIMARY], with_errors),
        credibility=credibility(results["augmentation"]) if results.get("augmentation") else None,
        domain_drops=domain_shift(results.get("domain_errors") or []),
        edit_kinds=edit_kinds(records, results.get("training_sets")),
        stage_times=stage_times(results.get("stages") or {}, results.get("processes") or 1),
    )
    if results.get("training_sets"):
        analysis = replace(analysis, training_sets=training_matrix(results, records, analysis.pe_series))
    return replace(analysis, conclusions=_conclusions(analysis))


def changes_length(test_set: str) -> bool:
    """Whether a test set (``config`` or ``config/split``) holds missing or redundant characters."""
    spec = CONFIGS.get(test_set.split("/")[0])
    return spec is not None and spec.changes_length


def _decoding(records: Iterable[Mapping], name: str) -> dict[tuple[str, int], float | None]:
    """The decoding setting ``name`` each model and seed was evaluated with (one per evaluation: tuned once, on
    validation)."""
    found: dict[tuple[str, int], float | None] = {}
    for r in records:
        found.setdefault((r["model"], r["seed"]), r.get(name))
    return found


def _not_evidence(preset: str | None, table: Mapping[tuple[str, str], Cell], with_errors: Sequence[str]) -> str | None:
    """Why a run's numbers mean nothing: a smoke preset, or every score at the floor (``None`` otherwise)."""
    reasons = []
    if preset in MEANINGLESS_PRESETS:
        reasons.append(f"preset `{preset}` only checks that every stage runs (tiny models, a few training steps)")
    best = max((c.mean for (_, t), c in table.items() if t in with_errors), default=0.0)
    if best < FLOOR:
        reasons.append(
            f"the best {PRIMARY} on any test set with errors is {100 * best:.1f}%, below the floor of {100 * FLOOR:g}%"
        )
    return "; ".join(reasons) or None


def _mean_over(table: Mapping[tuple[str, str], Cell], model: str, test_sets: Sequence[str]) -> float:
    return float(np.mean([table[model, t].mean for t in test_sets]))


def _rankings(
    table: Mapping[str, Mapping], families: Mapping[str, tuple[str, tuple[str, ...]]], common: Sequence[str]
) -> dict[str, list[Rank]]:
    """Fusion strategies and information sources ranked by the mean F1 of their models over ``common`` test sets."""
    if not common:
        return {"fusion": [], "information": []}
    models = list(families)
    fusions = dict.fromkeys(fusion for fusion, _ in families.values())
    groups = {
        "fusion": {fusion: [m for m in models if families[m][0] == fusion] for fusion in fusions},
        "information": {
            group: [m for m in models if not is_seq2seq_model(m) and test(families[m][1])]
            for group, test in INFORMATION_GROUPS.items()
        },
    }
    rankings = {}
    for kind, members in groups.items():
        rows = []
        for group, ms in members.items():
            if not ms:
                continue
            means = {metric: {m: _mean_over(table[metric], m, common) for m in ms} for metric in REPORTED}
            best = max(ms, key=means[PRIMARY].get)
            rows.append(
                Rank(group, ms, best, {metric: float(np.mean(list(means[metric].values()))) for metric in REPORTED})
            )
        rankings[kind] = sorted(rows, key=lambda row: -row.means[PRIMARY])
    return rankings


def _pe_series(records: Iterable[Mapping]) -> dict[str, float]:
    """``{test set: P_e}`` of the ``probs`` splits whose ``P_e`` is known, by increasing ``P_e``."""
    points = {
        split_name(r["config"], r["split"]): float(r["error_prob"])
        for r in records
        if r["config"] == "probs" and r.get("error_prob") is not None
    }
    return dict(sorted(points.items(), key=lambda kv: kv[1]))


def _seen_unseen_sets(test_sets: Sequence[str]) -> list[tuple[str, str]]:
    """The seen/unseen contrasts that the run's test sets allow."""
    contrasts = []
    for seen, unseen in SEEN_UNSEEN:
        if seen == "seen" and seen not in test_sets:
            seen = "test"
        if seen in test_sets and unseen in test_sets:
            contrasts.append((seen, unseen))
    return contrasts


def _pair_recall(records: Iterable[Mapping]) -> dict[tuple[str, str], dict[str, float]]:
    """Mean character-level correction recall on seen and unseen pairs within each test set, where scored."""
    keys = ("seen_char_cor_r", "unseen_char_cor_r", "seen_n_errors", "unseen_n_errors")
    groups: dict[tuple[str, str], list[Mapping]] = defaultdict(list)
    for r in records:
        if all(k in r["scores"] for k in keys):
            groups[r["model"], split_name(r["config"], r["split"])].append(r["scores"])
    return {key: {k: float(np.mean([s[k] for s in scores])) for k in keys} for key, scores in groups.items()}


def _stability(table: Mapping[str, Mapping[tuple[str, str], Cell]], test_sets: Sequence[str]) -> dict[str, dict]:
    """Per test set (with errors), each metric's spread relative to its score: the mean bootstrap interval width
    over the score, and the mean std across seeds over the mean score. Relative, because a lower score has a
    narrower interval anyway; cells whose score is 0 (nothing right: no spread to speak of) are left out."""
    result = {}
    for t in test_sets:
        row = {}
        for metric in REPORTED:
            group = [c for (_, test), c in table[metric].items() if test == t and c.mean > 0]
            widths = [w / c.mean for c in group for w in c.widths]
            stds = [c.std / c.mean for c in group if c.std is not None]
            row[f"{metric}_rel_ci_width"] = float(np.mean(widths)) if widths else None
            row[f"{metric}_rel_seed_std"] = float(np.mean(stds)) if stds else None
        result[t] = row
    return result


Evidence = tuple[str, list[tuple[str, Comparison]]]  # (what is compared, [(metric, comparison)])


def _fusion_evidence(analysis: RunAnalysis) -> Evidence:
    """1: the best model fusing phonetic and graphic information against BERT alone, on each test set with errors."""
    table, models, families = analysis.cells, analysis.models, analysis.families
    baseline = next((m for m in models if m == "bert"), next((m for m in models if families[m][0] == "none"), None))
    fused = [m for m in models if _phonetic_and_graphic(families[m][1])]
    shared = [t for t in analysis.substitution_test_sets if all((m, t) in table[PRIMARY] for m in [baseline, *fused])]
    if not (baseline and fused and shared):
        return "needs a BERT-only model and a model fusing phonetic and graphic information on shared test sets", []
    best = max(fused, key=lambda m: _mean_over(table[PRIMARY], m, shared))
    paired = analysis.paired
    found = []
    for t in shared:
        for metric in REPORTED:
            cells, pairs = table[metric], paired.get((best, baseline, t, metric))
            found.append(
                (metric, compare_cells(f"{t}, {metric}", best, cells[best, t], baseline, cells[baseline, t], pairs))
            )
    return f"{best} (the best model fusing phonetic and graphic information) against {baseline}", found


def _pe_evidence(analysis: RunAnalysis) -> Evidence:
    """2: per model, the highest against the lowest F1 over the P_e series (two different points of it, also when
    every point has the same F1)."""
    series, found = analysis.pe_series, []
    if len(series) < 2:
        return "needs the probs series with at least two known P_e", []
    for model in analysis.models:
        for metric in REPORTED:
            points = {t: analysis.cells[metric][model, t] for t in series if (model, t) in analysis.cells[metric]}
            if len(points) >= 2:
                high = max(points, key=lambda t: points[t].mean)
                low = min((t for t in points if t != high), key=lambda t: points[t].mean)
                found.append((metric, compare_cells(f"{model}, {metric}", high, points[high], low, points[low])))
    pes = ", ".join(f"{pe:g}" for pe in series.values())
    return f"per model, the highest against the lowest F1 over the P_e series {pes}", found


def _seen_evidence(analysis: RunAnalysis) -> Evidence:
    """3: per model, seen against unseen errors and seen against unseen contexts."""
    table, contrasts, found = analysis.cells, analysis.seen_unseen, []
    if not contrasts:
        return "needs seen (or test) with unseen_k / unseen_v, or scontext with test", []
    for seen, unseen in contrasts:
        for model in analysis.models:
            for metric in REPORTED:
                cells = table[metric]
                if (model, seen) in cells and (model, unseen) in cells:
                    comparison = compare_cells(
                        f"{model}, {metric}", seen, cells[model, seen], unseen, cells[model, unseen]
                    )
                    found.append((metric, comparison))
    return "per model: " + "; ".join(f"{a} against {b}" for a, b in contrasts), found


def _stability_evidence(analysis: RunAnalysis) -> Evidence:
    """4: per test set with errors, the sentence-level against the character-level spread (by sign)."""
    found = []
    for t, row in analysis.stability.items():
        for spread in ("rel_ci_width", "rel_seed_std"):
            sent, char = row[f"sent_cor_f1_{spread}"], row[f"char_cor_f1_{spread}"]
            if sent is not None and char is not None:
                found.append((PRIMARY, compare_values(f"{t}, {spread}", "sent_cor_f1", sent, "char_cor_f1", char)))
    if not found:
        return "needs non-zero scores with bootstrap intervals (score(..., bootstrap=N)) or several seeds", []
    return (
        "per test set, the mean bootstrap interval width and (with several seeds) the mean std across seeds, each "
        "relative to the score: sentence level against character level"
    ), found


def _conclusions(analysis: RunAnalysis) -> dict[int, Conclusion]:
    """Each claim with its evidence and verdict (see :class:`Conclusion`)."""
    result = {}
    for number, evidence in zip(CLAIMS, (_fusion_evidence, _pe_evidence, _seen_evidence, _stability_evidence)):
        basis, found = evidence(analysis)
        deciding = [c for metric, c in found if metric == PRIMARY]
        result[number] = Conclusion(
            CLAIMS[number], basis, deciding, [c for metric, c in found if metric != PRIMARY], verdict(deciding)
        )
    return result


# ---- SIGHAN's credibility ------------------------------------------------------------------------------------------

CREDIBILITY_CLAIM = "SIGHAN test sets cannot reflect a model's performance reliably."
CONTROLLED = ("test", "unseen_k", "unseen_v", "scontext")
"""The controlled test sets whose rise (or not) under the augmentation tells a real gain from SIGHAN's inflation."""
CREDIBILITY_RULE = (
    "per model, the paired difference augmented minus plain on character-level correction F1 (every seed): the "
    "expected way when SIGHAN-15 rises beyond its interval (the interval lies above zero) while no controlled test "
    "set does; the opposite way when SIGHAN-15 and every controlled test set rise alike; no difference that counts "
    "otherwise"
)

Difference = tuple[float, tuple[float, float]]  # mean paired difference over seeds, union of the seeds' intervals


@dataclass(frozen=True)
class AugmentationEffect:
    """One model trained with and without the augmentation, on the same sentences: per metric and test set, the
    paired difference augmented − plain (:data:`Difference`, only where every seed has one) and the two mean scores
    ``(plain, augmented)``; ``outcome`` by :data:`CREDIBILITY_RULE`."""

    model: str
    seeds: list[int]
    differences: dict[str, dict[str, Difference]]
    scores: dict[str, dict[str, tuple[float, float]]]
    outcome: str


@dataclass(frozen=True)
class Credibility:
    """The paper's claim that SIGHAN test sets cannot reflect a model's performance reliably, tested with the
    augmentation stage: the set (``confusion``), the pairs removed so nothing leaks into the unseen test sets
    (``leaks``), how much of each test set S_train and the augmented set cover (``coverage``: ``{test set:
    {"S_train" / "augmented": coverage}}``), each model's effect, and the verdict (:data:`CREDIBILITY_RULE`, then
    :data:`VERDICT_RULE` over the models)."""

    claim: str
    confusion: str | None
    leaks: dict[str, int]
    coverage: dict[str, dict[str, dict[str, float | None]]]
    test_sets: list[str]  # SIGHAN-15 then the controlled test sets, those the stage compared
    effects: list[AugmentationEffect]
    basis: str
    verdict: str


def rises(difference: Difference | None) -> bool:
    """Whether a paired difference is above zero beyond its interval."""
    return difference is not None and difference[1][0] > 0


def effect_outcome(differences: Mapping[str, Difference]) -> str:
    """:data:`CREDIBILITY_RULE` over one model's paired differences ``{test set: difference}`` on the primary
    metric: ``expected``, ``opposite`` or ``none`` (also when SIGHAN-15 or every controlled test set is missing)."""
    controlled = [differences[t] for t in CONTROLLED if t in differences]
    if SIGHAN15 not in differences or not controlled or not rises(differences[SIGHAN15]):
        return "none"
    if not any(map(rises, controlled)):
        return "expected"
    return "opposite" if all(map(rises, controlled)) else "none"


def credibility(augmentation: Mapping) -> Credibility:
    """SIGHAN's credibility from ``results.json``'s ``augmentation`` (see :meth:`csc_hf.study.Study.run`)."""
    seeds_of: dict[str, set] = defaultdict(set)
    for r in augmentation["records"]:
        seeds_of[r["model"]].add(r["seed"])
    groups: dict[tuple[str, str, str], list[Mapping]] = defaultdict(list)
    for e in augmentation.get("paired", []):
        groups[e["model"], e["metric"], split_name(e["config"], e["split"])].append(e)
    order = [SIGHAN15, *CONTROLLED]
    test_sets = [t for t in order if any(key[2] == t for key in groups)]
    effects = []
    for model, seeds in seeds_of.items():
        differences: dict[str, dict[str, Difference]] = {metric: {} for metric in REPORTED}
        scores: dict[str, dict[str, tuple[float, float]]] = {metric: {} for metric in REPORTED}
        for metric in REPORTED:
            for t in test_sets:
                entries = groups.get((model, metric, t), [])
                if entries and {e["seed"] for e in entries} == seeds:
                    differences[metric][t] = paired_difference(entries)
                    scores[metric][t] = (
                        float(np.mean([e["b"] for e in entries])),
                        float(np.mean([e["a"] for e in entries])),
                    )
        effects.append(
            AugmentationEffect(model, sorted(seeds), differences, scores, effect_outcome(differences[PRIMARY]))
        )
    has_sighan = all(SIGHAN15 in e.differences[PRIMARY] for e in effects)
    if not effects or not has_sighan or not any(t in CONTROLLED for t in test_sets):
        basis = (
            "needs every model's paired differences on sighan15 and on at least one controlled test set "
            f"({', '.join(CONTROLLED)})"
        )
    else:
        basis = (
            f"{', '.join(e.model for e in effects)} trained on the same sentences with and without the "
            f"augmentation, compared on {SIGHAN15} and on {', '.join(t for t in test_sets if t != SIGHAN15)}"
        )
    leaks = augmentation.get("leaks") or {}
    return Credibility(
        CREDIBILITY_CLAIM,
        augmentation.get("confusion"),
        dict(leaks),
        dict(augmentation.get("coverage") or {}),
        test_sets,
        effects,
        basis,
        outcome_verdict([e.outcome for e in effects]),
    )


# ---- the training-distribution stage -------------------------------------------------------------------------------

GRID_SET = "grid"  # how the tables name the preset's own training set (the grid's models)
TRAINING_QUESTIONS = {
    "pe": "A training set whose P_e matches the test set's beats the grid's training set there.",
    "type": "Training on one error type only costs the other type.",
    "fusion": "Fusion helps more when the training set lacks an error type.",
}
TRAINING_RULE = (
    "P_e: per variant and probs test set whose P_e is nearest one training set's other than the grid's, that set's "
    "model minus the grid's model (paired): expected above zero beyond its interval, opposite below. Type: per "
    "variant, the phonetic-only model on graphic and the graphic-only model on phonetic, minus the grid's model "
    "(paired): expected below zero. Fusion: per fusion variant, its gain over bert (paired, within a training set) "
    "on the error type the set lacks, against the same gain with the grid's training set: expected when the two "
    "intervals do not overlap and the first is higher, opposite when the second is. Then the verdict rule of the "
    "conclusions over the outcomes"
)


@dataclass(frozen=True)
class TrainingSets:
    """The training-distribution stage (``results.json``'s ``training_sets``): the train x test matrix of the
    primary metric per variant (``scores``: ``{(variant, training set, test set): Cell}``, :data:`GRID_SET` for the
    preset's own training set), each set's model minus the grid's model (``against_grid``: ``{(variant, set, test
    set): Difference}``, on the test sets both give the same sentences), each variant's gain over bert within a set
    (``gains``: ``{(variant, set, test set): Difference}``), and each of :data:`TRAINING_QUESTIONS` with the
    comparisons that answer it and its verdict. ``test_sets`` are those with errors; ``false_positives`` holds the
    false-positive rate on the error-free ones (``{(variant, set, test set): Cell}``); ``set_variants``: the sets that
    train only some variants (``{set: variants}``)."""

    sets: dict[str, dict]
    variants: list[str]
    test_sets: list[str]
    scores: dict[tuple[str, str, str], Cell]
    false_positives: dict[tuple[str, str, str], Cell]
    against_grid: dict[tuple[str, str, str], Difference]
    gains: dict[tuple[str, str, str], Difference]
    questions: dict[str, list[Comparison]]
    verdicts: dict[str, str]
    set_variants: dict[str, list[str]] = field(default_factory=dict)


def _set_differences(entries: Iterable[Mapping], against: str) -> dict[tuple[str, str, str], Difference]:
    """``{(model, training set, test set): Difference}`` of the primary metric over every seed, of the paired
    comparisons against ``against`` (``grid``, or a baseline variant)."""
    groups: dict[tuple[str, str, str], list[Mapping]] = defaultdict(list)
    for e in entries:
        if e["metric"] == PRIMARY and e["against"] == against:
            groups[e["model"], e.get("training_set") or GRID_SET, split_name(e["config"], e["split"])].append(e)
    return {key: paired_difference(found) for key, found in groups.items()}


def _nearest_set(error_prob: float, train_p_e: Mapping[str, float]) -> str | None:
    """The training set whose P_e is nearest ``error_prob``, or None on a tie."""
    distance = sorted((abs(p - error_prob), name) for name, p in train_p_e.items())
    if len(distance) > 1 and distance[0][0] == distance[1][0]:
        return None
    return distance[0][1] if distance else None


def training_matrix(results: Mapping, grid_records: Iterable[Mapping], pe_series: Mapping[str, float]) -> TrainingSets:
    """The training-distribution stage's matrix and answers from ``results.json`` (its ``training_sets`` and, for the
    grid's models, ``grid_records``)."""
    stage = results["training_sets"]
    sets, variants = dict(stage["sets"]), list(stage["variants"])
    params = results.get("params") if isinstance(results.get("params"), Mapping) else {}
    base_params = params.get("bench_params") or {}
    grid_p_e = BenchParams(**base_params).train_p_e
    tagged = [{**r, "training_set": r.get("training_set") or GRID_SET} for r in stage["records"]] + [
        {**r, "training_set": GRID_SET} for r in grid_records if r["model"] in variants
    ]
    clean = {split_name(r["config"], r["split"]) for r in tagged if r["scores"].get("n_errors", 1) == 0}
    scores, false_positives = {}, {}
    for name in (GRID_SET, *sets):
        of_set = [r for r in tagged if r["training_set"] == name]
        for (model, test), cell in cells(of_set, PRIMARY).items():
            if test not in clean:
                scores[model, name, test] = cell
        without = [r for r in of_set if split_name(r["config"], r["split"]) in clean and FALSE_POSITIVES in r["scores"]]
        for (model, test), cell in cells(without, FALSE_POSITIVES).items():
            false_positives[model, name, test] = cell
    test_sets = [t for t in _test_sets(tagged) if t not in clean]
    against_grid = _set_differences(stage["paired"], "grid")
    gains = _set_differences(stage["paired"], "bert")
    # P_e: the sets that change only the training P_e, and the grid's own
    train_p_e = {GRID_SET: grid_p_e} | {
        name: changes["train_error_prob"] for name, changes in sets.items() if set(changes) == {"train_error_prob"}
    }
    pe_comparisons = []
    for variant in variants:
        for test, error_prob in pe_series.items():
            nearest = _nearest_set(error_prob, train_p_e)
            difference = against_grid.get((variant, nearest, test))
            if nearest in (None, GRID_SET) or difference is None:
                continue
            low, high = difference[1]
            outcome = "expected" if low > 0 else "opposite" if high < 0 else "none"
            a, b = scores[variant, nearest, test], scores[variant, GRID_SET, test]
            pe_comparisons.append(
                Comparison(
                    f"{variant} on {test}",
                    nearest,
                    GRID_SET,
                    a.mean,
                    b.mean,
                    a.interval,
                    b.interval,
                    outcome,
                    difference,
                )
            )
    # error type: a set of phonetic (graphic) pairs only, on the other type's test set
    lacking = {"S_train_phonetic": "graphic", "S_train_graphic": "phonetic"}
    set_lacks = {name: lacking[c["train_confusion"]] for name, c in sets.items() if c.get("train_confusion") in lacking}
    type_comparisons = []
    for variant in variants:
        for name, test in set_lacks.items():
            difference = against_grid.get((variant, name, test))
            if difference is None:
                continue
            low, high = difference[1]
            outcome = "expected" if high < 0 else "opposite" if low > 0 else "none"
            a, b = scores[variant, name, test], scores[variant, GRID_SET, test]
            type_comparisons.append(
                Comparison(
                    f"{variant} on {test}",
                    GRID_SET,
                    name,
                    b.mean,
                    a.mean,
                    b.interval,
                    a.interval,
                    outcome,
                    (-difference[0], (-high, -low)),
                )
            )
    # fusion: the gain over bert on the type a set lacks, against the same gain with the grid's set
    fusion_comparisons = []
    for variant in variants:
        if variant == "bert":
            continue
        for name, test in set_lacks.items():
            lacking_gain, grid_gain = gains.get((variant, name, test)), gains.get((variant, GRID_SET, test))
            if lacking_gain is None or grid_gain is None:
                continue
            (la, (la_low, la_high)), (ga, (ga_low, ga_high)) = lacking_gain, grid_gain
            outcome = "expected" if la_low > ga_high else "opposite" if ga_low > la_high else "none"
            fusion_comparisons.append(
                Comparison(
                    f"{variant} − bert on {test}", name, GRID_SET, la, ga, (la_low, la_high), (ga_low, ga_high), outcome
                )
            )
    questions = {"pe": pe_comparisons, "type": type_comparisons, "fusion": fusion_comparisons}
    return TrainingSets(
        sets,
        variants,
        test_sets,
        scores,
        false_positives,
        against_grid,
        gains,
        questions,
        {key: verdict(found) for key, found in questions.items()},
        dict(stage.get("set_variants") or {}),
    )


# ---- domain shift -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DomainDrop:
    """One variant's character-level correction recall on a main split (``reference``: ``test``, ``unseen_k`` or
    ``unseen_v``) and on the domain split built with the same controls, mean over seeds, and the drop split by the
    :data:`csc_hf.dataset_stats.ERROR_GROUPS` of the errors (context seen in training, characters around it known):
    ``composition`` is the part that comes from the domain holding other shares of those groups (at the main split's
    recall per group), ``within`` the part that comes from lower recall inside the groups; ``shares`` are each group's
    share of the errors ``(main, domain)``."""

    variant: str
    domain: str
    reference: str
    recall: tuple[float, float]
    composition: float
    within: float
    shares: dict[str, tuple[float, float]]


def _group_rates(entries: Sequence[Mapping]) -> tuple[dict[str, float], dict[str, float], float]:
    """Each group's share of the errors and recall, and the overall recall, over the entries (seeds) pooled."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in entries:
        for group, (n, corrected) in e["groups"].items():
            totals[group][0] += n
            totals[group][1] += corrected
    n_all = sum(n for n, _ in totals.values())
    shares = {g: n / n_all if n_all else 0.0 for g, (n, _) in totals.items()}
    recalls = {g: c / n if n else 0.0 for g, (n, c) in totals.items()}
    return shares, recalls, (sum(c for _, c in totals.values()) / n_all if n_all else 0.0)


def domain_shift(entries: Iterable[Mapping]) -> list[DomainDrop]:
    """The drop of each variant's recall from each main split to the domain splits built with the same controls
    (:func:`csc_hf.benchmark.configs.domain_reference`), decomposed (see :class:`DomainDrop`), from
    ``results.json``'s ``domain_errors``. Shift-share: recall = Σ share × recall per group, so main − domain =
    Σ (share_main − share_domain) × recall_main + Σ share_domain × (recall_main − recall_domain)."""
    groups: dict[tuple[str, str], list[Mapping]] = defaultdict(list)
    references: dict[str, str] = {}
    for e in entries:
        name = split_name(e["config"], e["split"])
        groups[e["model"], name].append(e)
        if e["config"] in DOMAINS:
            references[name] = domain_reference(e["split"])
    drops = []
    for (variant, name), found in groups.items():
        reference = references.get(name)
        if reference is None or (variant, reference) not in groups:
            continue
        share_t, recall_t, overall_t = _group_rates(groups[variant, reference])
        share_d, recall_d, overall_d = _group_rates(found)
        names = sorted(set(share_t) | set(share_d))
        composition = sum((share_t.get(g, 0.0) - share_d.get(g, 0.0)) * recall_t.get(g, 0.0) for g in names)
        within = sum(share_d.get(g, 0.0) * (recall_t.get(g, 0.0) - recall_d.get(g, 0.0)) for g in names)
        shares = {g: (share_t.get(g, 0.0), share_d.get(g, 0.0)) for g in names}
        drops.append(DomainDrop(variant, name, reference, (overall_t, overall_d), composition, within, shares))
    return drops


# ---- missing and redundant characters ------------------------------------------------------------------------------


@dataclass(frozen=True)
class EditKindRow:
    """One model on the test sets with missing and redundant characters: whether it can insert and delete (the
    ``edit_kinds`` its records say it kept: ``None`` when they do not say), its correction recall of each edit kind
    per test set (``{(test set, kind): Cell}``, over seeds) and its implausible predictions (empty, or longer than
    twice their source: counted over seeds and test sets)."""

    model: str
    can_change_length: bool | None
    recall: dict[tuple[str, str], Cell]
    implausible: int


@dataclass(frozen=True)
class EditKinds:
    """Which models handle which edit kind: the length-changing test sets of the run, the ``(test set, kind)``
    columns that hold gold errors of that kind, and one row per model (and per model of a training set that puts
    missing or redundant characters in its training data, ``train_edit_shares``: ``bart (set edits)``)."""

    test_sets: list[str]
    columns: list[tuple[str, str]]
    rows: list[EditKindRow]


def edit_kinds(records: Sequence[Mapping], training_sets: Mapping | None = None) -> EditKinds | None:
    """:class:`EditKinds` from the grid's records and those of the training sets with missing or redundant characters
    (``results.json``'s ``training_sets``); ``None`` when the run has no test set with such errors."""
    sets = (training_sets or {}).get("sets") or {}
    length_sets = {
        name
        for name, changes in sets.items()
        if BenchParams(
            train_edit_shares=changes.get("train_edit_shares", BenchParams.train_edit_shares)
        ).train_changes_length
    }
    trained = [
        {**r, "model": f"{r['model']} (set {r['training_set']})"}
        for r in (training_sets or {}).get("records", [])
        if r.get("training_set") in length_sets
    ]
    chosen = [r for r in [*records, *trained] if changes_length(split_name(r["config"], r["split"]))]
    if not chosen:
        return None
    test_sets = _test_sets(chosen)
    columns = [
        (t, kind)
        for t in test_sets
        for kind in EDIT_KINDS
        if any(r["scores"].get(f"{kind}_n_errors") for r in chosen if split_name(r["config"], r["split"]) == t)
    ]
    recall = {
        kind: cells([r for r in chosen if f"{kind}_char_cor_r" in r["scores"]], f"{kind}_char_cor_r")
        for kind in EDIT_KINDS
    }
    rows = []
    for model in dict.fromkeys(r["model"] for r in chosen):
        own = [r for r in chosen if r["model"] == model]
        kinds = [r.get("edit_kinds") for r in own]
        can = None if None in kinds else any(set(k) - {SUBSTITUTION} for k in kinds)
        found = {(t, kind): recall[kind][model, t] for t, kind in columns if (model, t) in recall[kind]}
        rows.append(EditKindRow(model, can, found, sum(int(r["scores"].get("n_implausible") or 0) for r in own)))
    return EditKinds(test_sets, columns, rows)
