"""Under ``--lang zh`` the CLI's error line is Chinese: the lead-in always, the message where
attnscope.i18n's cli table spells it (the English words raised by the commands themselves)."""

import pytest

from attnscope.cli import error_line, lang_of, main


def _err(capsys, argv) -> str:
    assert main(argv) == 2
    return capsys.readouterr().err.strip()


def test_a_bad_format_in_chinese(capsys, tmp_path):
    err = _err(capsys, ["plot", "--kind", "hist", "--lang", "zh", "-o", str(tmp_path / "x.txt")])
    assert err == "attnscope plot：错误：看不出 'x.txt' 的格式：请用 .png、.svg 或 .pdf 文件名"


def test_an_existing_file_in_chinese_and_in_english(capsys, tmp_path):
    out = tmp_path / "x.png"
    out.write_bytes(b"")
    err = _err(capsys, ["plot", "--kind", "hist", "--lang=zh", "-o", str(out)])
    assert err == f"attnscope plot：错误：-o {str(out)!r} 已经存在；加上 --overwrite 覆盖它，或换一个名字"
    err = _err(capsys, ["plot", "--kind", "hist", "-o", str(out)])
    assert err == f"attnscope plot: error: -o {str(out)!r} already exists; add --overwrite to replace it, or choose another name"


def test_an_option_out_of_range_in_chinese(capsys, tmp_path):
    err = _err(capsys, ["plot", "--kind", "hist", "--lang", "zh", "--d-k", "0", "-o", str(tmp_path / "x.png")])
    assert err == "attnscope plot：错误：--d-k 必须在 1 到 16384 之间，收到的是 0"
    err = _err(capsys, ["plot", "--kind", "hist", "--lang", "zh", "--d-k", "x", "-o", str(tmp_path / "x.png")])
    assert err == "attnscope plot：错误：--d-k 必须是 1 到 16384 之间的整数，收到的是 'x'"


def test_a_missing_file_in_chinese(capsys, tmp_path):
    err = _err(capsys, ["check", str(tmp_path / "nope.yaml"), "--lang", "zh"])
    assert err == f"attnscope check：错误：找不到文件：{tmp_path / 'nope.yaml'}"


def test_an_untranslated_message_keeps_its_words_behind_a_chinese_lead_in():
    assert error_line("plot", "something new", "zh") == "attnscope plot：错误：something new"
    assert error_line(None, "something new", "en") == "attnscope: error: something new"


@pytest.mark.parametrize("words, lang", [(["plot", "--lang", "zh"], "zh"), (["plot", "--lang=zh"], "zh"),
                                         (["plot"], "en"), (["plot", "--lang", "fr"], "en"),
                                         (["plot", "--lang"], "en")])
def test_lang_of(words, lang):
    assert lang_of(words) == lang
