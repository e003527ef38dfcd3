"""The length policy: what an LLM's answer of another length than its source counts as. One option, three values,
recorded with every result; pure functions of strings.

``strict``
    An answer of another length is rejected: the sentence keeps its source, as a deployed guard that refuses such
    rewrites would (an error sentence is then missed; an error-free one stays a true negative). The rejected count is
    reported with the scores, so no rewrite goes unseen.
``substitutions``
    The answer is aligned to the source (shared characters matched first, the rest by minimum edits:
    :func:`csc_hf.edits.aligned_substitutions`, whitespace ignored) and only the substitutions at a source position
    are kept, as C-LLM does (and as csc_hf keeps a seq2seq model's output): insertions and deletions are dropped.
``edits`` (the default)
    The answer is scored as written: insertions and deletions count as edits at source positions (as C2EC does).
    :func:`csc_hf.scoring.score` aligns such a prediction by minimum edits (every insertion and deletion a wrong
    change), as ``csc-bench score`` always has. The default because it hides nothing: the other two score a
    rewrite more kindly than what the model wrote.

An answer of the source's length is taken as it is under every policy, position by position, as every scorer reads a
tagging model's output. :func:`apply_length_policy` is the one entry point for a list of sentences (what scoring a
predictions file under a policy calls); :func:`source_edits` lists a prediction's edits at source positions.
"""

from __future__ import annotations

from collections.abc import Sequence

from csc_hf.edits import MISSING, aligned_edits, aligned_substitutions

LENGTH_POLICIES = {  # each policy, and what it makes of a prediction of another length than its source ("it is ...")
    "strict": "rejected, its sentence counted as left unchanged",
    "substitutions": "reduced to its substitutions at source positions, its insertions and deletions dropped",
    "edits": "scored as written, every insertion and deletion a wrong change",
}
DEFAULT_LENGTH_POLICY = "edits"


def check_length_policy(policy: str, option: str = "length_policy") -> str:
    """``policy`` if it is one of :data:`LENGTH_POLICIES`, else a ValueError naming ``option``."""
    if policy not in LENGTH_POLICIES:
        raise ValueError(f"{option} {policy!r} is not a length policy; choose {', '.join(LENGTH_POLICIES)}")
    return policy


def policy_prediction(source: str, answer: str, policy: str) -> str:
    """The prediction scored for one ``answer`` to ``source`` under ``policy`` (see the module docstring)."""
    if len(answer) == len(source):
        return answer
    if policy == "strict":
        return source
    if policy == "substitutions":
        chars = list(source)
        for position, char in aligned_substitutions(source, answer):
            chars[position] = char
        return "".join(chars)
    return answer


def apply_length_policy(sources: Sequence[str], answers: Sequence[str], policy: str) -> list[str]:
    """The predictions scored for ``answers`` (one per source, any lengths) under ``policy``: what scoring any
    system's output under a declared length policy calls before the scorer."""
    check_length_policy(policy)
    if len(sources) != len(answers):
        raise ValueError(f"{len(answers)} answers for {len(sources)} sources")
    return [policy_prediction(source, answer, policy) for source, answer in zip(sources, answers)]


def source_edits(source: str, prediction: str) -> list[dict[str, object]]:
    """The edits that turn ``source`` into ``prediction``, at source positions, in order: ``{"position", "wrong",
    "right"}`` with a substitution's characters, ``right`` "" for a deletion, ``wrong`` "" for an insertion (of the
    characters in ``right``, before ``position``; ``len(source)`` appends). A prediction of the source's length is
    read position by position; another one is aligned by :func:`csc_hf.edits.aligned_edits` (shared characters
    matched first, the rest by minimum edits; whitespace counts), consecutive insertions at one position joined."""
    if len(prediction) == len(source):
        return [{"position": i, "wrong": a, "right": b} for i, (a, b) in enumerate(zip(source, prediction)) if a != b]
    joined: list[dict[str, object]] = []
    for edit in aligned_edits(source, prediction, skip_whitespace=False):
        last = joined[-1] if joined else None
        if edit.kind == MISSING and last and not last["wrong"] and last["position"] == edit.position:
            last["right"] += edit.right
        else:
            joined.append({"position": edit.position, "wrong": edit.wrong or "", "right": edit.right or ""})
    return joined
