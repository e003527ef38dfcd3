"""Markdown tables, matplotlib plots and the report of a ``csc-bench run`` (:func:`write_report`).

The numbers come from :mod:`csc_hf.results` (a run) and :mod:`csc_hf.dataset_stats` (``csc-bench analyze``); this
module only renders them. Plots use matplotlib's Agg canvas
through :class:`matplotlib.figure.Figure` (no pyplot, no global backend).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .benchmark.plan import AUGMENTED_COPIES
from .dataset_stats import CONTEXT_N
from .files import write_atomic
from .markdown import percent, percent_range, signed_points, table
from .results import (
    CREDIBILITY_RULE,
    GRID_SET,
    PRIMARY,
    TRAINING_QUESTIONS,
    TRAINING_RULE,
    VERDICT_RULE,
    AugmentationEffect,
    Cell,
    Comparison,
    Conclusion,
    Credibility,
    DomainDrop,
    RunAnalysis,
    StageTimes,
    TrainingSets,
    analyze_results,
    is_seq2seq_model,
    load_results,
    paired_difference,
)
from .run_layout import PLOT_DIR, PLOTS, REPORT_FILE
from .scoring import REPORTED, score_name


def _title(text: str) -> str:
    return text[:1].upper() + text[1:]


def analysis_markdown(result: Mapping[str, Mapping]) -> str:
    """The tables of :func:`csc_hf.dataset_stats.analyze`: statistics (one column per split) and coverage."""
    stats = result["statistics"]
    names = list(stats)
    rows = ([key, *(stats[name][key] for name in names)] for key in stats[names[0]])
    parts = ["## Statistics", table(["", *names], rows)]
    if "coverage" in result:
        columns = list(dict.fromkeys(k for refs in result["coverage"].values() for v in refs.values() for k in v))
        rows = [
            [name, ref, *(values.get(k) for k in columns)]
            for name, refs in result["coverage"].items()
            for ref, values in refs.items()
        ]
        parts += ["## Coverage and context overlap", table(["data", "reference", *columns], rows)]
    return "\n\n".join(parts) + "\n"


def _interval(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else " " + percent_range(*interval)


def cell_text(cell: Cell | None) -> str | None:
    """``71.2 (69.8-72.5)`` for one seed, ``71.2 ± 0.8 (69.1-73.0)`` over seeds (F1 in %, the judging interval)."""
    if cell is None:
        return None
    spread = "" if cell.std is None else f" ± {percent(cell.std)}"
    return f"{percent(cell.mean)}{spread}{_interval(cell.interval)}"


def _comparison_row(c: Comparison) -> list:
    a, b = (
        f"{name}: {percent(value)}{_interval(interval)}"
        for name, value, interval in ((c.a, c.a_value, c.a_interval), (c.b, c.b_value, c.b_interval))
    )
    return [
        c.label,
        a,
        b,
        f"{100 * (c.a_value - c.b_value):+.1f}" if c.paired is None else _difference_text(c.paired),
        c.outcome,
    ]


def _difference_text(difference: tuple[float, tuple[float, float]], word: str = "paired ") -> str:
    """``+0.4 (paired -0.3 to +1.1)``, in points of %."""
    delta, (low, high) = difference
    return f"{signed_points(delta)} ({word}{signed_points(low)} to {signed_points(high)})"


def _paired_cell(entries: Sequence[Mapping] | None) -> str | None:
    """A paired difference over seeds, bold when zero lies outside its interval."""
    if not entries:
        return None
    difference = paired_difference(entries)
    text, (low, high) = _difference_text(difference, word=""), difference[1]
    return f"**{text}**" if low > 0 or high < 0 else text


# ---- plots -------------------------------------------------------------------------------------------------------


def _error_bars(cells: Sequence[Cell | None]) -> list[list[float]]:
    low = [0.0 if c is None or c.interval is None else max(0.0, 100 * (c.mean - c.interval[0])) for c in cells]
    high = [0.0 if c is None or c.interval is None else max(0.0, 100 * (c.interval[1] - c.mean)) for c in cells]
    return [low, high]


def _percent_axis(ax) -> None:
    """A y axis in % from 0 to at least 1: a panel whose values are all 0 keeps a readable scale (not -0.04..0.04)."""
    ax.set_ylim(0.0, max(ax.get_ylim()[1], 1.0))


def bars_figure(analysis: RunAnalysis, test_sets: Sequence[str], title: str):
    """Grouped bars: F1 of each model on each test set, one panel per metric, with the judging intervals. A bar of
    0 is labelled ``0`` and a test set a model did not run ``n/a``, so that no model looks missing."""
    from matplotlib.figure import Figure

    models = analysis.models
    fig = Figure(figsize=(max(6.0, 1.1 * len(test_sets) * max(1, len(models)) / 3), 7), layout="constrained")
    width = 0.8 / len(models)
    for ax, metric in zip(fig.subplots(len(REPORTED), 1), REPORTED):
        for i, model in enumerate(models):
            cells = [analysis.cells[metric].get((model, t)) for t in test_sets]
            x = [j + (i - (len(models) - 1) / 2) * width for j in range(len(test_sets))]
            heights = [0.0 if c is None else 100 * c.mean for c in cells]
            bars = ax.bar(x, heights, width, yerr=_error_bars(cells), capsize=2, label=model)
            labels = ["n/a" if c is None else "0" if h == 0 else "" for c, h in zip(cells, heights)]
            ax.bar_label(bars, labels=labels, fontsize="x-small")
        ax.set_xticks(range(len(test_sets)), test_sets, rotation=20)
        ax.set_ylabel(f"{score_name(metric)} (%)")
        _percent_axis(ax)
    ax.legend(fontsize="small", ncols=min(len(models), 4), loc="upper center", bbox_to_anchor=(0.5, -0.25))
    fig.suptitle(title)
    return fig


def pe_figure(analysis: RunAnalysis):
    """F1 against ``P_e`` over the ``probs`` series, one line per model, one panel per metric."""
    from matplotlib.figure import Figure

    series = analysis.pe_series
    fig = Figure(figsize=(10, 4), layout="constrained")
    for ax, metric in zip(fig.subplots(1, len(REPORTED)), REPORTED):
        for model in analysis.models:
            points = [
                (100 * pe, analysis.cells[metric][model, t])
                for t, pe in series.items()
                if (model, t) in analysis.cells[metric]
            ]
            if points:
                cells = [c for _, c in points]
                ax.errorbar(
                    [x for x, _ in points],
                    [100 * c.mean for c in cells],
                    yerr=_error_bars(cells),
                    marker="o",
                    capsize=2,
                    label=model,
                    clip_on=False,
                )  # points at 0 stay whole
        ax.set_xlabel("P_e (%)")
        ax.set_ylabel(f"{score_name(metric)} (%)")
        _percent_axis(ax)
    ax.legend(fontsize="small")
    fig.suptitle("F1 against the error probability P_e (probs)")
    return fig


def plot_bars(analysis: RunAnalysis, test_sets: Sequence[str], path: Path, title: str) -> Path:
    """Save :func:`bars_figure` to ``path``."""
    bars_figure(analysis, test_sets, title).savefig(path, dpi=110)
    return path


def plot_pe(analysis: RunAnalysis, path: Path) -> Path:
    """Save :func:`pe_figure` to ``path``."""
    pe_figure(analysis).savefig(path, dpi=110)
    return path


def training_figure(sets: TrainingSets):
    """Heatmaps of the train x test matrix, one per variant: character-level correction F1 (%) of each training set
    (rows, the grid's first) on each test set (columns), each cell with its difference from the grid's row."""
    from matplotlib.figure import Figure

    rows = [GRID_SET, *sets.sets]
    tests = [t for t in sets.test_sets if any((v, r, t) in sets.scores for v in sets.variants for r in rows)]
    fig = Figure(figsize=(max(6.0, 0.9 * len(tests) + 2), 1.0 + 0.55 * len(rows) * len(sets.variants)))
    axes = fig.subplots(len(sets.variants), 1, squeeze=False)[:, 0]
    top = max((100 * score.mean for score in sets.scores.values()), default=0.0) or 1.0  # one scale for every variant
    for ax, variant in zip(axes, sets.variants):
        values = [
            [100 * sets.scores[variant, r, t].mean if (variant, r, t) in sets.scores else float("nan") for t in tests]
            for r in rows
        ]
        image = ax.imshow(values, cmap="viridis", aspect="auto", vmin=0.0, vmax=top)
        for i, r in enumerate(rows):
            for j, t in enumerate(tests):
                if (variant, r, t) not in sets.scores:
                    continue
                delta = sets.against_grid.get((variant, r, t))
                label = f"{values[i][j]:.1f}" + ("" if delta is None else f"\n{100 * delta[0]:+.1f}")
                color = "black" if values[i][j] > 0.6 * top else "white"  # readable on viridis' light end
                ax.text(j, i, label, ha="center", va="center", fontsize=6, color=color)
        ax.set_xticks(range(len(tests)), tests, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        ax.set_title(f"{variant}: F1 (%) by training set, and the difference from {GRID_SET}", fontsize=8)
        fig.colorbar(image, ax=ax, fraction=0.015, pad=0.01)
    fig.tight_layout()
    return fig


def plot_training(sets: TrainingSets, path: Path) -> Path:
    """Save :func:`training_figure` to ``path``."""
    training_figure(sets).savefig(path, dpi=110)
    return path


# ---- the report --------------------------------------------------------------------------------------------------


def _results_tables(analysis: RunAnalysis) -> list[str]:
    parts, test_sets = [], analysis.error_test_sets  # F1 is 0 by definition without errors
    for metric in REPORTED:
        rows = [[m, *(cell_text(analysis.cells[metric].get((m, t))) for t in test_sets)] for m in analysis.models]
        parts += [f"### {_title(score_name(metric))} (%)", table(["model", *test_sets], rows)]
    return parts


def _false_positive_table(analysis: RunAnalysis) -> list[str]:
    clean = analysis.clean_test_sets
    if not clean:
        return ["This run has no error-free test set (`clean`): no false-positive rate."]
    rows = [[m, *(cell_text(analysis.false_positives.get((m, t))) for t in clean)] for m in analysis.models]
    return [
        "### False-positive rate on error-free sentences (%)",
        "The share of the error-free sentences a model changes (lower is better; F1 is 0 by definition there).",
        table(["model", *clean], rows),
    ]


def _decoding_table(analysis: RunAnalysis) -> list[str]:
    grid = analysis.keep_bias_grid
    among = f" among {', '.join(f'{b:g}' for b in grid)}" if grid else ""
    prior_grid = analysis.similarity_prior_grid or []
    with_prior = len(prior_grid) > 1 or any(analysis.similarity_prior.values())

    def cell(m: str, seed: int) -> str | None:
        if is_seq2seq_model(m):
            return "- (seq2seq)"
        bias, prior = analysis.keep_bias.get((m, seed)), analysis.similarity_prior.get((m, seed))
        if bias is None:
            return None
        return f"{bias:g} / {prior or 0:g}" if with_prior else f"{bias:g}"

    rows = [[m, *(cell(m, seed) for seed in analysis.seeds)] for m in analysis.models]
    text = (
        f"`keep_bias`, the bias added to the source character's logit, tuned on the validation split{among} "
        "(best character-level correction F1; ties: the smaller prior, then the smaller bias). A seq2seq model has "
        "no source logit."
    )
    if with_prior:
        text += (
            " Each cell is `keep_bias / similarity_prior`: the prior added to the logits of the characters that "
            "sound or look like the source, tuned with it"
            + (f" among {', '.join(f'{p:g}' for p in prior_grid)}" if prior_grid else "")
            + "."
        )
    return [text, table(["model", *(f"seed {seed}" for seed in analysis.seeds)], rows)]


def _paired_tables(analysis: RunAnalysis) -> list[str]:
    pairs, test_sets = analysis.paired, analysis.error_test_sets  # F1 means nothing without errors
    if not pairs:
        return [
            "The run saved no predictions of a baseline and another model on the same test set: no paired comparison."
        ]
    parts = [
        "Each model's F1 minus the baseline's with the same seed, on the same sentences (points of %; mean over "
        "seeds, and the union of the seeds' paired bootstrap 95% intervals). **Bold**: zero lies outside the "
        "interval."
    ]
    for baseline in sorted({b for _, b, _, _ in pairs}):
        for metric in REPORTED:
            rows = [
                [m, *(_paired_cell(pairs.get((m, baseline, t, metric))) for t in test_sets)]
                for m in analysis.models
                if any((m, baseline, t, metric) in pairs for t in test_sets)
            ]
            parts += [f"### {_title(score_name(metric))} against {baseline}", table(["model", *test_sets], rows)]
    return parts


def _ranking_tables(analysis: RunAnalysis) -> list[str]:
    parts = []
    for kind, rows in analysis.ranking.items():
        if rows:
            parts += [
                f"### By {kind}",
                table(
                    ["rank", kind, "models", *(f"mean {m} (%)" for m in REPORTED), "best"],
                    (
                        [i, r.group, ", ".join(r.models), *(percent(r.means[m]) for m in REPORTED), r.best]
                        for i, r in enumerate(rows, 1)
                    ),
                ),
            ]
    if not parts:
        return ["No test set with errors was scored for every model: nothing to rank."]
    common = ", ".join(analysis.common_test_sets)
    return [
        f"Mean F1 of a group's models over the test sets every model ran ({common}); a model counts in every "
        "information group it matches (phonetic+graphic: pinyin with stroke or glyph).",
        *parts,
    ]


def _pe_table(analysis: RunAnalysis) -> list[str]:
    series = analysis.pe_series
    if not series:
        return ["This run has no `probs` series with known P_e."]
    parts = []
    for metric in REPORTED:
        rows = [[m, *(cell_text(analysis.cells[metric].get((m, t))) for t in series)] for m in analysis.models]
        header = ["model", *(f"P_e={pe:g}" for pe in series.values())]
        parts += [f"{_title(score_name(metric))} (%):", table(header, rows)]
    return parts


def _seen_unseen_tables(analysis: RunAnalysis) -> list[str]:
    parts = []
    if analysis.seen_unseen:
        header = ["model", "metric", *(f"{a} - {b}" for a, b in analysis.seen_unseen)]
        rows = []
        for model in analysis.models:
            for metric in REPORTED:
                cells = analysis.cells[metric]
                rows.append(
                    [
                        model,
                        metric,
                        *(
                            f"{100 * (cells[model, a].mean - cells[model, b].mean):+.1f}"
                            if (model, a) in cells and (model, b) in cells
                            else None
                            for a, b in analysis.seen_unseen
                        ),
                    ]
                )
        parts += ["Gap in F1 points (seen minus unseen):", table(header, rows)]
    if analysis.pair_recall:
        rows = [
            [
                m,
                t,
                percent(r["seen_char_cor_r"]),
                percent(r["unseen_char_cor_r"]),
                f"{r['seen_n_errors']:.0f}",
                f"{r['unseen_n_errors']:.0f}",
            ]
            for (m, t), r in analysis.pair_recall.items()
        ]
        parts += [
            "Character-level correction recall on error pairs seen / unseen in training, within each test set:",
            table(["model", "test set", "seen pairs (%)", "unseen pairs (%)", "seen errors", "unseen errors"], rows),
        ]
    return parts or [
        "This run has no seen/unseen contrast (it needs seen or test with unseen_k / unseen_v, or scontext)."
    ]


def _stability_table(analysis: RunAnalysis) -> list[str]:
    columns = [f"{m}_{s}" for s in ("rel_ci_width", "rel_seed_std") for m in REPORTED]
    rows = [[t, *(percent(row[c]) for c in columns)] for t, row in analysis.stability.items()]
    return [
        "Mean bootstrap interval width and mean standard deviation across seeds, relative to the score (in %; "
        "scores of 0 left out):",
        table(["test set", *columns], rows),
    ]


def _conclusion_section(number: int, conclusion: Conclusion) -> list[str]:
    comparisons = conclusion.comparisons
    counts = {o: sum(c.outcome == o for c in comparisons) for o in ("expected", "opposite", "none")}
    parts = [
        f"### {number}. {conclusion.claim} **{conclusion.verdict}**",
        f"Evidence: {conclusion.basis}. {len(comparisons)} comparisons: {counts['expected']} go the expected way, "
        f"{counts['opposite']} the opposite way, {counts['none']} show no difference that counts.",
    ]
    header = ["comparison", "expected higher", "expected lower", "difference", "outcome"]
    if comparisons:
        parts.append(table(header, map(_comparison_row, comparisons)))
    if conclusion.reference:
        parts += [
            "Sentence level, for reference (not counted):",
            table(header, map(_comparison_row, conclusion.reference)),
        ]
    return parts


LEAKS = {
    "pairs": "pairs in the set",
    "removed_unseen_k": "removed: key of S_unseen^k",
    "removed_unseen_v": "removed: pair of S_unseen^v",
    "kept": "kept",
    "kept_new": "kept and new to S_train",
}


def _effect_cell(effect: AugmentationEffect, metric: str, test_set: str) -> str | None:
    """``31.2 → 45.0: **+13.8 (+9.1 to +18.2)**``: plain and augmented F1, and the paired difference (bold when
    zero lies outside its interval)."""
    difference = effect.differences[metric].get(test_set)
    if difference is None:
        return None
    plain, augmented = effect.scores[metric][test_set]
    text, (low, high) = _difference_text(difference, word=""), difference[1]
    return f"{percent(plain)} → {percent(augmented)}: " + (f"**{text}**" if low > 0 or high < 0 else text)


def _credibility_section(credibility: Credibility, warning: str | None) -> list[str]:
    """SIGHAN's credibility: the augmentation, its leak filter, coverage, the paired differences and the verdict."""
    c = credibility
    counts = {o: sum(e.outcome == o for e in c.effects) for o in ("expected", "opposite", "none")}
    leaks = "; ".join(f"{LEAKS.get(k, k)}: {v}" for k, v in c.leaks.items())
    parts = [
        *([warning] if warning else []),
        f"The second half of the paper's fourth conclusion: {c.claim} **{c.verdict}**",
        f"Each model is trained twice, as many epochs each: on the training sentences corrupted with S_train (the "
        f"grid's model), and on those rows plus augmentation data, the same sentences again corrupted with the "
        f"confusion set `{c.confusion}` (the move of adding Wang271K) less every pair that would leak into the unseen "
        f"test sets ({leaks}). Both are evaluated on the same test sentences. Over {AUGMENTED_COPIES} times the rows, "
        f"the augmented model takes {AUGMENTED_COPIES} times the steps: a model far from converged gains from the "
        f"steps alone, which this comparison does not tell from the added pairs (a plain model trained as many steps "
        f"does).",
    ]
    if c.coverage:
        columns = [
            ("S_train", "error_coverage"),
            ("S_train", "pair_coverage"),
            ("augmented", "error_coverage"),
            ("augmented", "pair_coverage"),
        ]
        rows = [[t, *(percent(refs.get(ref, {}).get(k)) for ref, k in columns)] for t, refs in c.coverage.items()]
        parts += [
            "### Coverage",
            "The share of each test set's errors and distinct error pairs (right, wrong) that "
            "S_train and the augmented set (S_train ∪ the kept pairs) hold (%):",
            table(["test set", "S_train: errors", "S_train: pairs", "augmented: errors", "augmented: pairs"], rows),
        ]
    parts += [
        "### Augmented minus plain",
        f"F1 of the plain → the augmented model (%), and the paired difference in points (mean over seeds; the "
        f"union of the seeds' paired bootstrap 95% intervals). **Bold**: zero lies outside the interval. "
        f"Outcome: {CREDIBILITY_RULE}. Verdict: {VERDICT_RULE}.",
    ]
    for metric in REPORTED:
        outcome = metric == PRIMARY
        rows = [
            [e.model, *(_effect_cell(e, metric, t) for t in c.test_sets), *([e.outcome] if outcome else [])]
            for e in c.effects
        ]
        header = ["model", *c.test_sets, *(["outcome"] if outcome else [])]
        title = f"{_title(score_name(metric))}" + ("" if outcome else " (for reference, not counted)")
        parts += [f"{title}:", table(header, rows)]
    parts.append(
        f"Evidence: {c.basis}. Models compared: {len(c.effects)}; {counts['expected']} go the expected "
        f"way, {counts['opposite']} the opposite way, {counts['none']} show no difference that counts. "
        f"Verdict: **{c.verdict}**."
    )
    return parts


def _set_cell(sets: TrainingSets, variant: str, name: str, test: str) -> str | None:
    """``64.3`` for the grid's row; ``61.0: **-3.3 (-4.1 to -2.5)**`` for a set's (bold: zero outside the paired
    interval of the difference from the grid's model); ``61.0`` where the two test sets differ (``seen``)."""
    cell = sets.scores.get((variant, name, test))
    if cell is None:
        return None
    difference = sets.against_grid.get((variant, name, test))
    if name == GRID_SET or difference is None:
        return percent(cell.mean)
    text, (low, high) = _difference_text(difference, word=""), difference[1]
    return f"{percent(cell.mean)}: " + (f"**{text}**" if low > 0 or high < 0 else text)


def _training_section(sets: TrainingSets, plot: str | None, warning: str | None) -> list[str]:
    """The training-distribution stage: the sets, the train x test matrix per variant, and the three questions."""
    described = "; ".join(
        f"`{name}`"
        + (f" ({', '.join(sets.set_variants[name])} only)" if name in sets.set_variants else "")
        + ": "
        + ", ".join(f"{k} = {v}" for k, v in changes.items())
        for name, changes in sets.sets.items()
    )
    parts = [
        *([warning] if warning else []),
        "The paper trained at one substitution probability and one confusion set, and left open which training "
        f"distribution to use. Each of {', '.join(sets.variants)} is trained once more per training set, from the "
        f"same pretrained encoder, for as many steps: {described}; `{GRID_SET}` is the grid's own training set. Every "
        "model meets the same test sentences and errors, except `seen` and `scontext`, which are made from each "
        "training set (so not paired across sets).",
        f"{_title(score_name(PRIMARY))} (%) per training set (rows) and test set (columns), mean over seeds; beside a "
        "set's value, its paired difference from the grid's model in points (the union of the seeds' paired "
        "bootstrap 95% intervals; **bold**: zero lies outside it).",
    ]
    cleans = sorted({t for _, _, t in sets.false_positives})
    for variant in sets.variants:
        rows = [
            [
                name,
                *(_set_cell(sets, variant, name, t) for t in sets.test_sets),
                *(
                    percent(sets.false_positives[variant, name, t].mean)
                    if (variant, name, t) in sets.false_positives
                    else None
                    for t in cleans
                ),
            ]
            for name in (GRID_SET, *sets.sets)
        ]
        parts += [f"`{variant}`:", table(["training set", *sets.test_sets, *(f"{t} fpr" for t in cleans)], rows)]
    if plot:
        parts.append(f"![Train x test]({plot})")
    parts.append(f"Outcomes: {TRAINING_RULE}.")
    for key, question in TRAINING_QUESTIONS.items():
        comparisons = sets.questions[key]
        parts.append(f"### {question} **{sets.verdicts[key]}**")
        if comparisons:
            header = ["comparison", "expected higher", "expected lower", "difference", "outcome"]
            parts.append(table(header, map(_comparison_row, comparisons)))
        else:
            parts.append("No comparison: the run lacks the training sets or test sets it needs.")
    return parts


def _domain_section(analysis: RunAnalysis, drops: Sequence[DomainDrop]) -> list[str]:
    """Domain shift: each variant's F1 on the main test set and on each domain, paired differences from bert, and
    how much of the recall drop comes from unseen contexts and unknown characters."""
    domains = [t for t in analysis.test_sets if t.startswith("domain_") and "/" not in t]
    f1 = analysis.cells[PRIMARY]
    rows = [[m, *(cell_text(f1.get((m, t))) for t in ("test", *domains))] for m in analysis.models]
    parts = [
        "A model trained on the main corpus, scored on the same controls built from text of other corpora (the "
        "dataset card names each source and its licence). "
        f"{_title(score_name(PRIMARY))} (%) on the main `test` and each domain's `test` split:",
        table(["model", "test", *domains], rows),
    ]
    with_bert = [m for m in analysis.models if m != "bert"]
    if "bert" in analysis.models and with_bert:
        rows = [
            [m, *(_paired_cell(analysis.paired.get((m, "bert", t, PRIMARY))) for t in ("test", *domains))]
            for m in with_bert
        ]
        parts += [
            "Each model minus `bert`, paired on the same sentences (points; **bold**: zero outside the interval):",
            table(["model", "test", *domains], rows),
        ]
    if drops:
        rows = [
            [
                d.variant,
                d.domain,
                d.reference,
                percent(d.recall[0]),
                percent(d.recall[1]),
                signed_points(d.recall[0] - d.recall[1]),
                signed_points(d.composition),
                signed_points(d.within),
                *(f"{percent(d.shares[g][0])} → {percent(d.shares[g][1])}" for g in sorted(d.shares)),
            ]
            for d in sorted(drops, key=lambda d: (d.domain, analysis.models.index(d.variant)))
            if d.variant in analysis.models
        ]
        groups = sorted(drops[0].shares)
        parts += [
            "Where the drop comes from. Character-level correction recall (%) on the main split with the same "
            "controls (`test`, `unseen_k` or `unseen_v`) and on the domain's (seeds pooled), and its drop split in "
            "two (shift-share): *composition*, the part due to the domain "
            f"holding more errors in contexts the training sentences lack (no character {CONTEXT_N}-gram around the "
            f"error occurs there) or near a character the model's vocabulary lacks (read as [UNK], within "
            f"{CONTEXT_N - 1} characters), "
            "at the main split's recall in each of those groups; and *within*, the part due to lower recall inside "
            "the groups. The last columns "
            "give each group's share of the errors, main → domain.",
            table(
                ["model", "domain split", "main split", "main", "domain", "drop", "composition", "within", *groups],
                rows,
            ),
        ]
    return parts


def _edit_kinds_section(analysis: RunAnalysis) -> list[str]:
    """Which models handle which edit kind (correction recall per kind and test set, whether it can insert and
    delete, implausible predictions)."""
    kinds = analysis.edit_kinds
    able = {True: "yes", False: "no (tagging)", None: "-"}
    rows = [
        [
            row.model,
            able[row.can_change_length],
            *(cell_text(row.recall.get(column)) for column in kinds.columns),
            row.implausible,
        ]
        for row in kinds.rows
    ]
    header = ["model", "inserts and deletes", *(f"{t}: {kind} recall" for t, kind in kinds.columns), "implausible"]
    return [
        "Test sets with missing characters (corrected by an insertion) and redundant ones (corrected by a deletion), "
        "scored by edit alignment (`csc_hf.score(..., alignment=True)`): each cell is the character-level correction "
        "recall of that kind of error on that test set (%, mean over seeds and the interval that judges differences). "
        "A tagging model predicts one character per source character and cannot insert or delete: it is scored "
        "anyway (it can still correct the substitutions of `mixed`). A seq2seq model, and a tagging model with an edit "
        "head (`bert+edit_head`), keep their Han insertions and deletions on these test sets. A model of a training "
        "set that puts missing and redundant characters in its training data (`train_edit_shares`) has its own row; "
        "its paired differences from the grid's model are in "
        '"Which training distribution". Implausible predictions (empty, or longer than twice their source) are '
        "scored as they are and counted over seeds.",
        table(header, rows),
    ]


def _time_section(times: StageTimes) -> list[str]:
    """Where the run's time went, by kind of stage, and the machines its stages ran on."""
    rows = [
        [kind, count, f"{seconds / 3600:.2f}", f"{seconds / count / 60:.1f}"]
        for kind, (count, seconds) in times.kinds.items()
    ]
    rows.append(["all", sum(count for count, _ in times.kinds.values()), f"{times.seconds / 3600:.2f}", ""])
    shared = (
        f" The models' stages (`train`, `evaluate`) ran in {times.processes} processes side by side, so the run took "
        "less wall time than this sum."
        if times.processes > 1
        else ""
    )
    machines = [
        f"- {count} stage(s): {machine or 'not recorded (finished before csc_hf recorded it)'}"
        for machine, count in times.machines.items()
    ]
    return [
        "Each finished stage's wall time as it ran (a training resumed from a checkpoint counts its earlier pieces; "
        "a stage that ran beside other work on the machine took longer than alone)." + shared,
        table(["kind of stage", "finished", "hours", "minutes each (mean)"], rows),
        "The machines the stages ran on (CPU, flags, compute path):",
        "\n".join(machines),
    ]


def report_markdown(analysis: RunAnalysis, plots: Mapping[str, str]) -> str:
    """The report's text; ``plots`` maps a plot's name to its path relative to the report."""
    conclusions = analysis.conclusions
    families = [[m, fusion, "+".join(sources) or "-"] for m, (fusion, sources) in analysis.families.items()]
    warning = (
        f"**These numbers mean nothing, and the verdicts below are not evidence for or against the paper**: "
        f"{analysis.not_evidence}."
        if analysis.not_evidence
        else None
    )
    parts = [
        "# CSC study report",
        *([warning] if warning else []),
        f"Preset `{analysis.preset}`; models {', '.join(analysis.models)}; seeds "
        f"{', '.join(map(str, analysis.seeds))}; test sets {', '.join(analysis.test_sets)}. F1 in %; each cell "
        "is the mean over seeds (± the std across seeds when several ran) and, in parentheses, the interval that "
        "judges differences: the bootstrap interval, or with several seeds the union of the seeds' intervals.",
        "## The paper's conclusions",
        *([warning] if warning else []),
        f"Conclusions 1-3 are judged on {score_name(PRIMARY)} (the metric the paper recommends) over the "
        f"substitution test sets (the paper's errors; missing and redundant characters have their own section); a "
        f"difference counts "
        f"when the paired bootstrap interval of the difference excludes zero (models whose predictions the run "
        f"saved, every seed), else when the two intervals do not overlap. Conclusion 4 compares the spread of the two "
        f"metrics by sign. "
        f"Verdict: {VERDICT_RULE}.",
        table(
            ["#", "conclusion", "verdict"],
            [
                *([i, c.claim, c.verdict] for i, c in conclusions.items()),
                *([["4b", analysis.credibility.claim, analysis.credibility.verdict]] if analysis.credibility else []),
            ],
        ),
    ]
    for number, conclusion in conclusions.items():
        parts += _conclusion_section(number, conclusion)
    if analysis.credibility:
        parts += ["## SIGHAN's credibility (conclusion 4b)", *_credibility_section(analysis.credibility, warning)]
    if analysis.training_sets:
        parts += [
            "## Which training distribution",
            *_training_section(analysis.training_sets, plots.get("training_sets"), warning),
        ]
    if analysis.edit_kinds:
        parts += [
            "## Missing and redundant characters",
            *([warning] if warning else []),
            *_edit_kinds_section(analysis),
        ]
    if any(t.startswith("domain_") for t in analysis.test_sets):
        parts += ["## Domain shift", *([warning] if warning else []), *_domain_section(analysis, analysis.domain_drops)]
    parts += ["## Models", table(["model", "fusion", "information"], families)]
    parts += ["## Results", *_results_tables(analysis)]
    if "test_sets" in plots:
        parts.append(f"![F1 per test set]({plots['test_sets']})")
    parts += _false_positive_table(analysis)
    parts += ["## Decoding", *_decoding_table(analysis)]
    parts += ["## Paired comparisons", *_paired_tables(analysis)]
    parts += ["## Fusion strategies and information sources", *_ranking_tables(analysis)]
    parts += ["## F1 against P_e", *_pe_table(analysis)]
    if "pe" in plots:
        parts.append(f"![F1 against P_e]({plots['pe']})")
    parts += ["## Seen and unseen errors and contexts", *_seen_unseen_tables(analysis)]
    if "seen_unseen" in plots:
        parts.append(f"![Seen and unseen]({plots['seen_unseen']})")
    parts += ["## Metric stability", *_stability_table(analysis)]
    if analysis.stage_times:
        parts += ["## Time", *_time_section(analysis.stage_times)]
    return "\n\n".join(parts) + "\n"


def write_report(run_dir: str | Path, analysis: RunAnalysis | None = None) -> Path:
    """Write ``RUN_DIR/report.md`` and its plots (``RUN_DIR/report_plots/*.png``) from ``RUN_DIR/results.json``
    (or from ``analysis``, its :func:`csc_hf.results.analyze_results` when already computed); returns the path."""
    run_dir = Path(run_dir)
    analysis = analyze_results(load_results(run_dir)) if analysis is None else analysis
    (run_dir / PLOT_DIR).mkdir(exist_ok=True)
    plots = {
        "test_sets": plot_bars(
            analysis, analysis.error_test_sets, run_dir / PLOT_DIR / PLOTS["test_sets"], "F1 per test set"
        )
    }
    if analysis.pe_series:
        plots["pe"] = plot_pe(analysis, run_dir / PLOT_DIR / PLOTS["pe"])
    if analysis.seen_unseen:
        sets = [t for t in analysis.test_sets if any(t in pair for pair in analysis.seen_unseen)]
        plots["seen_unseen"] = plot_bars(
            analysis, sets, run_dir / PLOT_DIR / PLOTS["seen_unseen"], "Seen and unseen errors and contexts"
        )
    if analysis.training_sets:
        plots["training_sets"] = plot_training(analysis.training_sets, run_dir / PLOT_DIR / PLOTS["training_sets"])
    path = run_dir / REPORT_FILE
    relative = {name: plot.relative_to(run_dir).as_posix() for name, plot in plots.items()}
    return write_atomic(path, report_markdown(analysis, relative))  # whole, when two processes of a run end together
