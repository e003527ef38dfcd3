import json

import pytest

from csc_hf.cli import main


def small_args(params: dict) -> list[str]:
    args = []
    for key, value in params.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


def test_build_prints_statistics_and_writes_sets(small_params, tmp_path, capsys):
    out_dir, cache = str(tmp_path / "out"), str(tmp_path / "cache")
    assert (
        main(["build", "test", "unseen_k", "--output", out_dir, "--cache-dir", cache, *small_args(small_params)]) == 0
    )
    out = capsys.readouterr().out
    assert "Confusion sets" in out and "S_unseen_k" in out and "unseen_k/test" in out and "errors_per_sentence" in out
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["configs"]["unseen_k/test"]["sentences"] == 80
    assert stats["confusion_sets"]["S_unseen_k"]["keys"] == 10
    assert (tmp_path / "out" / "S_seen.json").is_file()


def test_build_train_with_missing_and_redundant_characters(small_params, tmp_path, capsys):
    out_dir, cache = str(tmp_path / "out"), str(tmp_path / "cache")
    shares = ["--train-edit-shares", "0.5", "0.25", "0.25"]
    assert main(["build", "train", "--output", out_dir, "--cache-dir", cache, *small_args(small_params), *shares]) == 0
    train = json.loads((tmp_path / "out" / "stats.json").read_text())["configs"]["train/train"]
    assert train["missing_share"] > 0.1 and train["redundant_share"] > 0.1 and train["substitution_share"] > 0.3
    assert (
        main(["build", "train", "--cache-dir", cache, *small_args(small_params), "--train-edit-shares", "1", "1"]) == 2
    )
    assert "train_edit_shares=[1.0, 1.0]: give 3 non-negative shares" in capsys.readouterr().err


def test_bad_parameter_is_a_clear_error(small_params, tmp_path, capsys):
    assert main(["build", "test", "--cache-dir", str(tmp_path), *small_args(small_params), "--error-prob", "2"]) == 2
    assert "error_prob=2.0 is outside [0, 1]" in capsys.readouterr().err


def test_confusion_import_inspect_divide(tmp_path, capsys):
    src = tmp_path / "same_pinyin.txt"
    src.write_text("一\t壹\t漪\n乙\t已\t亿艺忆\n二\t贰\t而\n三\t叁\t散\n", encoding="utf-8")
    assert main(["confusion", "import", "--input", str(src), "--output", str(tmp_path / "s.json"), "--show", "乙"]) == 0
    assert "乙: 亿(p) 已(p) 忆(p) 艺(p)" in capsys.readouterr().out
    assert (
        main(
            [
                "confusion",
                "divide",
                "--input",
                str(tmp_path / "s.json"),
                "--n-unseen-keys",
                "1",
                "--n-unseen-v-keys",
                "1",
                "--output",
                str(tmp_path / "div"),
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "div" / "S_unseen_k.json").read_text())
    assert main(["confusion", "inspect", "--input", str(tmp_path / "nope.json")]) == 2
    assert "nope.json does not exist" in capsys.readouterr().err


def test_missing_model_is_a_clear_error(tmp_path, capsys):
    assert main(["correct", str(tmp_path / "none"), "我们"]) == 2
    assert f"model folder {tmp_path / 'none'} does not exist" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "none"), "--configs", "test"]) == 2


def test_any_library_error_is_one_line_and_debug_shows_the_traceback(capsys, monkeypatch):
    from csc_hf.cli import error_line, run_guarded

    try:
        try:
            b"\xce".decode("utf-8")
        except UnicodeDecodeError as cause:
            raise type("DatasetGenerationError", (Exception,), {})(
                "An error occurred while generating the dataset"
            ) from cause
    except Exception as wrapper:
        assert error_line(wrapper) == "'utf-8' codec can't decode byte 0xce in position 0: unexpected end of data"
    assert error_line(ValueError("first\n  second\n")) == "first second"
    assert (
        error_line(KeyError("unknown subset 'x'"))
        == "KeyError: unknown subset 'x' (--debug or CSC_HF_DEBUG=1 shows the traceback)"
    )

    def bug():
        raise TypeError("unsupported operand")

    monkeypatch.delenv("CSC_HF_DEBUG", raising=False)
    assert run_guarded("csc-bench x", bug) == 2
    err = capsys.readouterr().err
    assert err == "csc-bench x: error: TypeError: unsupported operand (--debug or CSC_HF_DEBUG=1 shows the traceback)\n"
    assert run_guarded("csc-bench x", bug, debug=True) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.endswith(
        "csc-bench x: error: TypeError: unsupported operand (--debug or CSC_HF_DEBUG=1 shows the traceback)\n"
    )
    monkeypatch.setenv("CSC_HF_DEBUG", "1")
    assert run_guarded("csc-bench x", bug) == 2 and "Traceback" in capsys.readouterr().err

    def interrupted():
        raise KeyboardInterrupt

    assert run_guarded("csc-bench x", interrupted) == 130
    assert capsys.readouterr().err == "csc-bench x: interrupted\n"


def test_debug_flag_is_documented(capsys):
    from csc_hf.cli import build_parser

    build_parser().print_help()
    assert "--debug" in capsys.readouterr().out


def test_changed_parameters_come_from_the_library():
    from csc_hf.benchmark import BenchParams
    from csc_hf.cli import bench_params, build_parser

    args = build_parser().parse_args(["build", "--seed", "42", "--probs", "0.1", "0.2", "--n-test", "9"])
    assert bench_params(args) == BenchParams.changed(vars(args)) == {"probs": (0.1, 0.2), "n_test": 9}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from csc_hf.modeling import CSCTokenizer, build_model

    folder = tmp_path_factory.mktemp("model")
    tokenizer = CSCTokenizer.from_texts(["我们今天去学校上课。他门在家"])
    model = build_model(
        "bert", tokenizer, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_correct_file_lines_end_at_newline_only(tiny_model, tmp_path, capsys):
    lines = ["我们今天\u2028去学校", "他门\u0085在家", "上课\x0c了", "我们\r"]  # the last line ends with \r\n
    (tmp_path / "in.txt").write_bytes("\n".join(lines).encode("utf-8") + b"\n")
    assert (
        main(["correct", str(tiny_model), "--file", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out.txt")])
        == 0
    )
    out = (tmp_path / "out.txt").read_bytes().decode("utf-8").split("\n")
    assert out[-1] == "" and [len(line) for line in out[:-1]] == [
        len(line.rstrip("\r")) for line in lines
    ]  # 4 in, 4 out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]  # no temporary file left


def test_correct_of_an_empty_file_prints_no_line(tiny_model, tmp_path, capsys, caplog):
    (tmp_path / "in.txt").write_text("", encoding="utf-8")
    assert main(["correct", str(tiny_model), "--file", str(tmp_path / "in.txt")]) == 0
    assert capsys.readouterr().out == "" and "holds no line: nothing to correct" in caplog.text
    assert main(["correct", str(tiny_model), "--file", str(tmp_path / "in.txt"), "--output", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o").read_text(encoding="utf-8") == ""  # zero lines in, zero lines out


def test_correct_checks_the_room_for_its_output_first(tmp_path, capsys, monkeypatch):
    """A disk without room for the corrected --file fails before the model loads, naming the output (it failed after
    the whole correction, without the path)."""
    import shutil
    from collections import namedtuple

    (tmp_path / "in.txt").write_text("我门今天去学校。\n" * 100, encoding="utf-8")
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 100, 100))
    argv = ["correct", str(tmp_path / "no-model"), "--file", str(tmp_path / "in.txt"), "--output", str(tmp_path / "o")]
    assert main(argv) == 2
    assert f"--output {tmp_path / 'o'}: needs about 2,500 bytes, and its disk has 100 free" in capsys.readouterr().err


def test_evaluate_checks_its_arguments_before_any_work(tiny_model, tmp_path, capsys, monkeypatch):
    import csc_hf.evaluation

    monkeypatch.setattr(
        csc_hf.evaluation, "evaluate_model", lambda *a, **k: pytest.fail("evaluated despite a bad argument")
    )
    assert main(["evaluate", str(tiny_model), "--bootstrap", "-1"]) == 2
    assert main(["evaluate", str(tiny_model), "--output", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_options_may_come_between_the_model_and_the_texts(tiny_model, capsys):
    """`csc-bench correct M --similarity-prior 3 TEXT` (the README's form): options and positional arguments in any
    order, as in every subcommand."""
    texts = ["我们今天去学校。", "他门在家"]
    assert main(["correct", str(tiny_model), "--similarity-prior", "3", *texts]) == 0
    first = capsys.readouterr().out.splitlines()
    assert main(["correct", "--similarity-prior", "3", str(tiny_model), texts[0], "--keep-bias", "0", texts[1]]) == 0
    assert capsys.readouterr().out.splitlines() == first and len(first) == 2
    with pytest.raises(SystemExit):
        main(["correct", str(tiny_model), "--similarity-prior", "3", *texts, "--bogus"])
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
