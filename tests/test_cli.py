import json

from csc_hf.cli import main


def small_args(params: dict) -> list[str]:
    args = []
    for key, value in params.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


def test_build_prints_statistics_and_writes_sets(small_params, tmp_path, capsys):
    out_dir, cache = str(tmp_path / "out"), str(tmp_path / "cache")
    assert main(["build", "test", "unseen_k", "--output", out_dir, "--cache-dir", cache, *small_args(small_params)]) == 0
    out = capsys.readouterr().out
    assert "Confusion sets" in out and "S_unseen_k" in out and "unseen_k/test" in out and "errors_per_sentence" in out
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["configs"]["unseen_k/test"]["sentences"] == 80
    assert stats["confusion_sets"]["S_unseen_k"]["keys"] == 10
    assert (tmp_path / "out" / "S_seen.json").is_file()


def test_bad_parameter_is_a_clear_error(small_params, tmp_path, capsys):
    assert main(["build", "test", "--cache-dir", str(tmp_path), *small_args(small_params), "--error-prob", "2"]) == 2
    assert "error_prob=2.0 is outside [0, 1]" in capsys.readouterr().err


def test_confusion_import_inspect_divide(tmp_path, capsys):
    src = tmp_path / "same_pinyin.txt"
    src.write_text("一\t壹\t漪\n乙\t已\t亿艺忆\n二\t贰\t而\n三\t叁\t散\n", encoding="utf-8")
    assert main(["confusion", "import", "--input", str(src), "--output", str(tmp_path / "s.json"), "--show", "乙"]) == 0
    assert "乙: 亿(p) 已(p) 忆(p) 艺(p)" in capsys.readouterr().out
    assert main(["confusion", "divide", "--input", str(tmp_path / "s.json"), "--n-unseen-keys", "1",
                 "--n-unseen-v-keys", "1", "--output", str(tmp_path / "div")]) == 0
    assert json.loads((tmp_path / "div" / "S_unseen_k.json").read_text())
    assert main(["confusion", "inspect", "--input", str(tmp_path / "nope.json")]) == 2
    assert "nope.json does not exist" in capsys.readouterr().err


def test_missing_model_is_a_clear_error(tmp_path, capsys):
    assert main(["correct", str(tmp_path / "none"), "我们"]) == 2
    assert f"model folder {tmp_path / 'none'} does not exist" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "none"), "--configs", "test"]) == 2
