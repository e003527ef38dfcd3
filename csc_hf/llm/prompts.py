"""Prompt templates for LLM correctors, and the parser that reads the corrected sentence back out of a generation.

A template is a YAML file (shipped ones in ``csc_hf/llm/templates/``, or a user's own) with these keys:

- ``name``, ``version`` (a positive int), ``description``: how results name it (``zh_few_shot@1``). A shipped
  ``(name, version)`` never changes; a new wording is a new version.
- ``user``: the user message; ``{text}`` (required) is where the sentence goes.
- ``system``: the system message (optional).
- ``answer_prefix``: what a plain prompt (a tokenizer without a chat template) writes before the answer, e.g.
  ``改正后：``.
- ``examples``: few-shot ``{source, target}`` pairs, given as earlier turns of the conversation.
- ``base``: ``NAME@VERSION`` of a shipped template whose keys this file extends (its own keys win).

A user's ``.txt`` file is the user message alone. The text is put in by plain replacement of ``{text}``, so other
braces in a template are kept as written. Results record the name, the version and the sha256 of what the model
reads (:meth:`PromptTemplate.record`), so that two runs with the same record used the same prompt.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from csc_hf.files import read_text, read_yaml

PLACEHOLDER = "{text}"
DEFAULT_TEMPLATE = "zh_zero_shot"
TEMPLATE_KEYS = ("name", "version", "description", "base", "system", "user", "answer_prefix", "examples")
_NAME = re.compile(r"[A-Za-z0-9][\w.-]*")


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt for one sentence (see the module docstring)."""

    name: str
    version: int | None  # None: a user's file that states none
    user: str
    system: str = ""
    answer_prefix: str = ""
    examples: tuple[tuple[str, str], ...] = ()
    description: str = ""
    file: str | None = field(default=None, compare=False)  # a user's template file (shipped ones: None)

    def __post_init__(self) -> None:
        where = f"template {self.file or self.name}"
        if PLACEHOLDER not in self.user:
            raise ValueError(f"{where}: the user message has no {PLACEHOLDER} placeholder (where the sentence goes)")
        for key in ("system", "answer_prefix"):
            if PLACEHOLDER in getattr(self, key):
                raise ValueError(f"{where}: {PLACEHOLDER} belongs in the user message, not in {key}")

    @property
    def label(self) -> str:
        """``name@version``, or the name alone for a template without a version."""
        return self.name if self.version is None else f"{self.name}@{self.version}"

    @property
    def sha256(self) -> str:
        """The hash of everything the model reads (not the name, description or file)."""
        data = {
            "system": self.system,
            "user": self.user,
            "answer_prefix": self.answer_prefix,
            "examples": [list(example) for example in self.examples],
        }
        return hashlib.sha256(json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()

    def record(self) -> dict[str, Any]:
        """What a result records about the prompt: name, version, sha256 and, for a user's file, its path."""
        return {
            "name": self.name,
            "version": self.version,
            "sha256": self.sha256,
            **({"file": self.file} if self.file else {}),
        }

    def user_message(self, text: str) -> str:
        return self.user.replace(PLACEHOLDER, text)

    def messages(self, text: str, system: bool = True) -> list[dict[str, str]]:
        """The conversation for a chat template: the system message (unless ``system`` is False: it is then the start
        of the first user message, for chat templates without a system role), each example as a user and an
        assistant turn, then the sentence."""
        turns = []
        for source, target in self.examples:
            turns += [{"role": "user", "content": self.user_message(source)}, {"role": "assistant", "content": target}]
        turns.append({"role": "user", "content": self.user_message(text)})
        if self.system and system:
            return [{"role": "system", "content": self.system}, *turns]
        if self.system:
            turns[0] = {"role": "user", "content": f"{self.system}\n\n{turns[0]['content']}"}
        return turns

    def plain_prompt(self, text: str) -> str:
        """The prompt for a model without a chat template: blocks separated by a blank line (the system message, each
        example, the sentence), each sentence's user message followed by a line with ``answer_prefix`` and its
        answer; the model writes the last answer and stops at the end of its line."""
        blocks = [self.system] if self.system else []
        blocks += [f"{self.user_message(source)}\n{self.answer_prefix}{target}" for source, target in self.examples]
        blocks.append(f"{self.user_message(text)}\n{self.answer_prefix}")
        return "\n\n".join(blocks)


def _templates_dir() -> Path:
    return Path(str(files("csc_hf.llm"))) / "templates"


def _read_yaml(path: Path, what: str) -> dict[str, Any]:
    data = read_yaml(path, what)  # UTF-8, no key given twice: errors name the file and the line
    if not isinstance(data, dict):
        raise ValueError(f"{what} {path}: expected a mapping of {', '.join(TEMPLATE_KEYS)}")
    return data


def shipped_templates() -> dict[str, dict[int, Path]]:
    """The shipped templates' files, by name and version."""
    found: dict[str, dict[int, Path]] = {}
    for path in sorted(_templates_dir().glob("*.yaml")):
        data = _read_yaml(path, "shipped template")
        name, version = data.get("name"), data.get("version")
        if version in found.get(name, {}):
            raise ValueError(f"shipped templates {found[name][version]} and {path} are both {name}@{version}")
        found.setdefault(name, {})[version] = path
    return found


def _from_data(data: Mapping[str, Any], where: str, file: str | None, seen: tuple[str, ...] = ()) -> PromptTemplate:
    """A template from a file's keys (its ``base`` resolved), or an error naming ``where`` and the key."""
    if unknown := sorted(set(data) - set(TEMPLATE_KEYS)):
        raise ValueError(f"{where}: unknown keys {unknown}; a template has {', '.join(TEMPLATE_KEYS)}")
    values = dict(data)
    if (base := values.pop("base", None)) is not None:
        if not isinstance(base, str) or "@" not in base:
            raise ValueError(f"{where}: base {base!r} must be a shipped template as NAME@VERSION, e.g. zh_zero_shot@1")
        if base in seen:
            raise ValueError(f"{where}: base {base} leads back to itself")
        parent = _shipped(base, seen + (base,))
        inherited = {
            "system": parent.system,
            "user": parent.user,
            "answer_prefix": parent.answer_prefix,
            "examples": [{"source": s, "target": t} for s, t in parent.examples],
        }
        values = {**inherited, **values}
    for key in ("name", "description", "system", "user", "answer_prefix"):
        if key in values and not isinstance(values[key], str):
            raise ValueError(f"{where}: {key} must be text, got {type(values[key]).__name__}")
    if "user" not in values:
        raise ValueError(f"{where}: no user message (key `user`, with {PLACEHOLDER} where the sentence goes)")
    version = values.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
        raise ValueError(f"{where}: version must be a positive integer, got {version!r}")
    name = values.get("name") or (Path(file).stem if file else "")
    if not _NAME.fullmatch(name):
        raise ValueError(f"{where}: name {name!r} must be letters, digits, '_', '.' or '-'")
    examples = values.get("examples") or []
    if not isinstance(examples, list):
        raise ValueError(f"{where}: examples must be a list of {{source, target}} pairs")
    pairs = []
    for i, example in enumerate(examples):
        if not (
            isinstance(example, Mapping)
            and set(example) == {"source", "target"}
            and all(isinstance(example[k], str) and example[k].strip() for k in ("source", "target"))
        ):
            raise ValueError(
                f"{where}: examples[{i}] must be a mapping of a non-empty source and target, got {example!r}"
            )
        pairs.append((example["source"], example["target"]))
    return PromptTemplate(
        name=name,
        version=version,
        user=values["user"],
        system=values.get("system", ""),
        answer_prefix=values.get("answer_prefix", ""),
        examples=tuple(pairs),
        description=values.get("description", ""),
        file=file,
    )


def _shipped(spec: str, seen: tuple[str, ...] = ()) -> PromptTemplate:
    name, _, version = spec.partition("@")
    templates = shipped_templates()
    if name not in templates:
        raise ValueError(
            f"no shipped prompt template {name!r}; shipped: {', '.join(sorted(templates))} (or give a "
            "template file, .yaml or .txt)"
        )
    versions = templates[name]
    if version and (not version.isdigit() or int(version) not in versions):
        known = ", ".join(map(str, sorted(versions)))
        raise ValueError(f"template {name} has no version {version!r}; versions: {known}")
    path = versions[int(version) if version else max(versions)]
    return _from_data(_read_yaml(path, "shipped template"), f"shipped template {path.name}", None, seen)


def load_template(template: str | Path | PromptTemplate) -> PromptTemplate:
    """The template ``template`` names: a :class:`PromptTemplate` as is; a file (``.yaml``/``.yml``: the keys of the
    module docstring; ``.txt``: the user message alone); else a shipped template as ``NAME`` (its latest version) or
    ``NAME@VERSION``. A missing file, an unknown name or version, or a user message without ``{text}`` is an error
    that names it."""
    if isinstance(template, PromptTemplate):
        return template
    text = str(template)
    path = Path(text).expanduser()
    if path.suffix in (".yaml", ".yml", ".txt") or path.is_file() or "/" in text or "\\" in text:
        if path.suffix == ".txt":
            user = read_text(path, "template").removesuffix("\n")
            return PromptTemplate(
                name=path.stem if _NAME.fullmatch(path.stem) else "template", version=None, user=user, file=text
            )
        return _from_data(_read_yaml(path, "template"), f"template {text}", text)
    return _shipped(text)


# ---- reading the answer --------------------------------------------------------------------------------------------

_THINK = re.compile(r"<think>.*?</think>", re.S)
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*\n?(.*?)(?:```|$)", re.S)
# A line that introduces the answer: a label (改正后, 修改后的句子为, Corrected sentence, ...) and a colon.
# A label may follow a few words (这句话应改为：X, 我认为正确的句子是：X).
_LABEL = re.compile(
    r"^[\s*#>`-]*(?:(?:改正|修改|纠正|修正|更正|订正)[后過过]?|正确|输出|答案|答|结果|回答|corrected|correction"
    r"|output|answer|[^：:\n]{0,8}?(?:改为|改成|应为|应该是|正确的?(?:句子|写法|说法|表达)))[^：:\n]{0,10}[：:][\s*]*",
    re.I,
)
# A reply that the sentence has no error (这个句子没有错误。无需修改。No errors found.): the answer is the source.
_NO_ERROR = re.compile(
    r"^[\s*#>`-]*(?:[^，。,.!！\n]{0,8}?(?:没有|无|不存在|未发现|没发现)(?:任何|明显的?)?(?:错误|错别字|别字|拼写错误)"
    r"|[^，。,.!！\n]{0,8}?(?:无需|不需要|不用)(?:修改|改动|纠正|改正)|[^，。,.!！\n]{0,6}?正确无误"
    r"|(?:there are |i found )?no (?:spelling )?(?:errors?|mistakes?|typos?)"
    r"|(?:the )?(?:sentence|text) is (?:already )?correct)",
    re.I,
)
_SOURCE_LABEL = re.compile(r"^[\s*#>`-]*(?:原句|原文|原始句子|句子|输入|input|source)[^：:\n]{0,6}[：:]", re.I)
_REMARK = re.compile(r"\s*(?:[（(][^（）()]*[）)]|(?:——|--|注[:：]|解释[:：]|说明[:：]|修改说明|改动[:：]).*)$")
_WRAPPERS = (("“", "”"), ('"', '"'), ("「", "」"), ("『", "』"), ("‘", "’"), ("'", "'"), ("**", "**"), ("`", "`"))


def _unwrap(answer: str, source: str) -> str:
    """``answer`` without the quotes or emphasis around it (nested too) that ``source`` has not."""
    unwrapped = None
    while unwrapped != answer:
        unwrapped = answer
        for left, right in _WRAPPERS:
            if (
                len(answer) > len(left) + len(right)
                and answer.startswith(left)
                and answer.endswith(right)
                and not (source.startswith(left) and source.endswith(right))
            ):
                answer = answer[len(left) : -len(right)].strip()
    return answer


def _echoes(start: str, source: str) -> bool:
    """Whether ``start`` (the beginning of a line) is the beginning of ``source``, up to a corrected character in four:
    then what looks like a label (``结果：``, ``正确的做法是：``) is the sentence's own text."""
    head = source[: len(start)]
    return len(head) == len(start) and sum(a != b for a, b in zip(start, head)) <= len(start) // 4


def _resembles(answer: str, source: str) -> bool:
    """Whether ``answer`` is ``source`` with at most one character in four changed (a corrected sentence)."""
    return len(answer) == len(source) and sum(a != b for a, b in zip(answer, source)) <= len(source) // 4


def parse_answer(output: str, source: str, answer_prefix: str = "") -> str:
    """The corrected sentence in a generation, or "" when it holds none.

    Drops reasoning (``<think>...</think>``; an unclosed one means no answer yet), takes the inside of a code fence,
    then the line that a label introduces (``改正后：X``, ``修改后的句子为：`` then X on the next line,
    ``这句话应改为：X``), else the first line that neither ends with a colon (``好的，以下是改正后的句子：``) nor
    echoes the source (``原句：...``); cuts a remark after it (``（"门"应为"们"）``, ``解释：...``) and quotes or
    ``**`` around it. A reply that the sentence has no error (``这个句子没有错误。``, ``No errors found.``) gives the
    source. Each step is skipped where the source itself has what it would remove (a source that starts with
    ``答：``, even with a character corrected in its label, or ends with a bracket keeps it; a corrected sentence
    that says ``没有错误`` is kept)."""
    text = _THINK.sub("", output)
    if "<think>" in text:
        return ""
    if (fence := _FENCE.search(text)) and "```" not in source:
        text = fence.group(1)
    if answer_prefix and text.lstrip().startswith(answer_prefix) and not source.startswith(answer_prefix):
        text = text.lstrip()[len(answer_prefix) :]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    answer = None
    for i, line in enumerate(lines):
        label = _LABEL.match(line)
        if label and not _echoes(line[: label.end()].strip(), source):
            rest = line[label.end() :].strip()
            answer = rest or (lines[i + 1] if i + 1 < len(lines) else "")
            break
    if answer is None:
        candidates = [
            line
            for line in lines
            if not (line.endswith((":", "：")) and not source.endswith((":", "：")))
            and not (_SOURCE_LABEL.match(line) and not _SOURCE_LABEL.match(source))
        ]
        answer = candidates[0] if candidates else ""
    answer = _unwrap(answer, source)
    if _NO_ERROR.match(answer) and not _resembles(answer, source) and not _NO_ERROR.match(source):
        return source
    remark = _REMARK.search(answer)
    if remark and remark.start() > 0 and not _REMARK.search(source):
        answer = _unwrap(answer[: remark.start()].strip(), source)
    return answer
