"""Where profiles and the kernelspec are found: the shipped folders (the repository's, or a wheel's copy),
your own profile folders ($WORKBENCH_PROFILES), and the import paths a venv's `.pth` files add, which the
sandbox binds read-only. The installed wheel itself is exercised in tests/test_wheel.py."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench
from workbench import shipped
from workbench.errors import ConfigError
from workbench.sandbox import PROFILES_DIR, PROFILES_ENV, load_profile, profile_names
from workbench.sandbox.plan import pth_dirs

CHECKOUT = Path(workbench.__file__).resolve().parents[1]


def test_a_checkout_reads_the_repository_folders_and_a_wheel_its_copy(tmp_path, monkeypatch):
    assert shipped.shipped_dir("kernels") == CHECKOUT / "kernels"
    assert PROFILES_DIR == CHECKOUT / "sandbox" / "profiles"
    (tmp_path / "sandbox" / "profiles").mkdir(parents=True)
    monkeypatch.setattr(shipped, "INSTALLED", tmp_path)
    assert shipped.shipped_dir("sandbox/profiles") == tmp_path / "sandbox" / "profiles"
    assert shipped.shipped_dir("kernels") == CHECKOUT / "kernels"  # not in this copy: the checkout's
    with pytest.raises(ValueError, match="shipped folders: sandbox/profiles, kernels"):
        shipped.shipped_dir("notebooks")  # type: ignore[arg-type]


def test_your_own_profile_folder_is_searched_first(tmp_path, monkeypatch):
    mine, more = tmp_path / "mine", tmp_path / "more"
    mine.mkdir()
    more.mkdir()
    (mine / "default.toml").write_text('name = "my-default"\nnetwork = false\n[limits]\nmemory_mb = 512\n')
    (more / "gpu-box.toml").write_text('name = "gpu-box"\n')
    monkeypatch.setenv(PROFILES_ENV, f"{mine}:{more}")
    assert load_profile("default").limits.memory_mb == 512  # yours shadows the shipped one
    assert load_profile("gpu-box").name == "gpu-box"
    assert {"default", "networked", "gpu-box"} <= set(profile_names())
    with pytest.raises(ConfigError, match=rf"unknown sandbox profile 'nope'; known: .*gpu-box.*\${PROFILES_ENV}"):
        load_profile("nope")
    monkeypatch.delenv(PROFILES_ENV)
    assert load_profile("default").limits.memory_mb == 4096


def test_pth_files_add_directories_as_site_reads_them(tmp_path):
    site, elsewhere = tmp_path / "site-packages", tmp_path / "other-env" / "site-packages"
    site.mkdir()
    elsewhere.mkdir(parents=True)
    (site / "reuse.pth").write_text(f"# a comment\nimport os; os.getcwd()\n{elsewhere}\n../missing\n\n")
    (site / "relative.pth").write_text("../other-env/site-packages\n")
    (site / "checkout.pth").write_text(f"{CHECKOUT}\n")  # an editable install's path line: not bound whole
    assert pth_dirs([str(site)]) == [elsewhere.resolve()]
