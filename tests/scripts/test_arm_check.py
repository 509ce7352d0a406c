"""The pure parts of scripts/arm_check.py and scripts/arm_root.py, without QEMU: the commands it
builds, mounts undone also on failure, the device script, and the parity table and its verdict.
The whole check runs by hand or in CI (docs/arm.md)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(name: str):
    sys.path.insert(0, str(SCRIPTS))  # arm_check imports arm_root from its folder
    try:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


arm_root = load_script("arm_root")
arm_check = load_script("arm_check")


def test_the_cache_is_outside_the_clone_and_named_by_the_environment(tmp_path):
    assert arm_root.cache_dir({"LASTEDGE_ARM_CACHE": str(tmp_path)}) == tmp_path
    assert arm_root.cache_dir({}) == Path.home() / ".cache" / "lastedge-arm"
    assert arm_root.root_path(tmp_path, "aarch64") == tmp_path / "roots" / "bookworm-arm64"
    assert arm_root.root_path(tmp_path, "armhf") == tmp_path / "roots" / "bookworm-armhf"


def test_commands_follow_the_measured_recipe(tmp_path):
    assert arm_root.debootstrap_command("aarch64", tmp_path, "http://m/debian") == [
        "debootstrap", "--arch=arm64", "--variant=minbase",
        "--include=python3,python3-venv,python3-pip,ca-certificates", "bookworm", str(tmp_path), "http://m/debian"]
    command = arm_root.chroot_command(tmp_path, "echo hi")
    assert command[:2] == ["env", "-i"] and command[-4:] == [str(tmp_path), "sh", "-c", "echo hi"]
    assert not any(part.startswith(("VIRTUAL_ENV", "PYTHONPATH")) for part in command)
    mounts = arm_root.mount_commands(tmp_path, tmp_path / "pip")
    assert [m[-1] for m in mounts] == [str(tmp_path / "proc"), str(tmp_path / "dev"),
                                       str(tmp_path / "root" / ".cache" / "pip")]
    assert not any("sys" in part for m in mounts for part in m)  # never /sys
    assert arm_root.binfmt_commands("armhf", True) == [["update-binfmts", "--enable", "qemu-arm"]]
    assert arm_root.binfmt_commands("aarch64", False)[0][:3] == ["mount", "-t", "binfmt_misc"]


@pytest.mark.parametrize("sources, mirror", [
    ("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n", "http://mirror.example/debian"),
    ("deb [arch=amd64] http://ftp.de.debian.org/debian/ bookworm main\n", "http://ftp.de.debian.org/debian"),
    ("URIs: http://deb.debian.org/debian-security\n", "http://deb.debian.org/debian"),  # not the main archive
    ("", "http://deb.debian.org/debian"),
])
def test_the_mirror_is_the_hosts(sources, mirror):
    assert arm_root.host_mirror(sources) == mirror


def test_missing_tools_are_the_packages_of_programs_not_on_path():
    assert arm_root.missing_apt_tools(lambda program: None) == ["qemu-user-static", "binfmt-support", "debootstrap"]
    assert arm_root.missing_apt_tools(lambda program: "/usr/bin/" + program) == []


def test_mounts_are_undone_in_reverse_order_also_when_the_block_fails(tmp_path):
    calls = []
    with pytest.raises(RuntimeError):
        with arm_root.mounted(tmp_path, tmp_path / "pip", calls.append):
            raise RuntimeError("install.sh failed")
    targets = [c[-1] for c in calls if c[0] == "mount"]
    assert [c for c in calls if c[0] == "umount"] == [["umount", t] for t in reversed(targets)]


def test_a_failed_mount_undoes_only_those_made(tmp_path):
    calls = []

    def runner(command):
        if command[-1].endswith("dev"):
            raise subprocess.CalledProcessError(32, command)
        calls.append(command)

    with pytest.raises(subprocess.CalledProcessError):
        with arm_root.mounted(tmp_path, tmp_path / "pip", runner):
            pytest.fail("the block must not run")
    assert calls[-1] == ["umount", str(tmp_path / "proc")] and len(calls) == 2


def test_a_busy_mount_is_detached_lazily(tmp_path):
    calls = []

    def runner(command):
        calls.append(command)
        if command[0] == "umount" and command[1] != "-l":
            raise subprocess.CalledProcessError(32, command)

    with arm_root.mounted(tmp_path, tmp_path / "pip", runner):
        pass
    assert sum(c[:2] == ["umount", "-l"] for c in calls) == 3


def test_a_half_built_root_is_bootstrapped_again(tmp_path, monkeypatch):
    monkeypatch.setattr(arm_root, "read_host_sources", lambda: "")
    root = tmp_path / "roots" / "bookworm-arm64"
    (root.with_name(root.name + ".partial") / "junk").mkdir(parents=True)
    calls = []

    def debootstrap(command):
        calls.append(command)
        (Path(command[-2]) / "usr" / "bin").mkdir(parents=True)

    arm_root.build_root("aarch64", root, debootstrap)
    assert calls[0][-2].endswith(".partial") and root.is_dir() and not (root / "junk").exists()
    (root / "usr" / "bin" / "python3").write_text("")
    (root / "usr" / "lib" / "python3.11" / "venv").mkdir(parents=True)
    arm_root.build_root("aarch64", root, debootstrap)
    assert len(calls) == 1  # built: reused


def test_the_device_script_runs_every_command_on_every_file():
    script = arm_check.device_script("/opt/lastedge-check/ovr", ["models/a.tflite", "models/b.npz"], False)
    assert script.startswith("cd /opt/lastedge-check/ovr\n")
    assert "sh install.sh > results/install.out" in script
    for index, name in enumerate(["models/a.tflite", "models/b.npz"]):
        for command in (f"lastedge predict {name} --data selftest.csv", f"lastedge bench {name}",
                        f"lastedge inspect {name}", f"on_device.py {name} selftest.csv"):
            assert command in script
        assert f"results/{index}.on_device.rc" in script
    assert "predict" not in arm_check.device_script("/b", ["models/a.tflite"], True)
    assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0


def fake_results(folder: Path, selftest: list, predictions: list, labels: str, install_rc: int = 0) -> None:
    folder.mkdir(parents=True)
    outputs = {"install": "", "selftest": json.dumps(selftest),
               "0.predict": json.dumps({"predictions": predictions}), "0.on_device": labels,
               "0.inspect": "{}", "0.bench": json.dumps([{"batches": [{"p50_us": 812.0}],
                                                          "machine": {"emulated": True}}])}
    for name, text in outputs.items():
        (folder / f"{name}.out").write_text(text)
        (folder / f"{name}.rc").write_text(str(install_rc if name == "install" else 0))
    (folder / "install.err").write_text("E: no python3-numpy\n")


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    monkeypatch.setattr(arm_check, "expected_labels", lambda b: {"models/model.npz": ["1", "2", "1"]})
    return tmp_path / "bundle"


SELFTEST = [{"file": "model.npz", "backend": "numpy", "precision": "fp32", "bound": 1e-4, "rows": 3,
             "max_difference": 2e-6, "agreement": 1.0, "passed": True}]


def test_a_matching_run_passes_and_its_timings_say_emulated(bundle, tmp_path):
    fake_results(tmp_path / "r", SELFTEST, [1, 2, 1], "1\n2\n1\n")
    rows = arm_check.collect("aarch64", "ovr", bundle, tmp_path / "r", False)
    assert [(r["passed"], r["predict"], r["on_device"], r["emulated_p50_us"]) for r in rows] == [(True, 1.0, 1.0, 812.0)]
    table = arm_check.format_table(rows)
    assert "p50 us (emulated)" in table.splitlines()[0] and table.splitlines()[1].split()[-1] == "ok"


def test_a_disagreeing_prediction_fails_the_row(bundle, tmp_path):
    fake_results(tmp_path / "r", SELFTEST, [1, 2, 1], "1\n2\n7\n")
    [row] = arm_check.collect("armhf", "shared", bundle, tmp_path / "r", False)
    assert not row["passed"] and row["on_device"] == pytest.approx(2 / 3)
    assert "67%" in arm_check.format_table([row]) and arm_check.format_table([row]).endswith("FAIL")


def test_a_failed_install_is_one_failing_row_naming_its_error(bundle, tmp_path):
    fake_results(tmp_path / "r", [], [], "", install_rc=1)
    [row] = arm_check.collect("armhf", "ovr", bundle, tmp_path / "r", False)
    assert not row["passed"] and row["error"] == "install.sh exited 1: E: no python3-numpy"
    assert "FAIL: install.sh exited 1" in arm_check.format_table([row])
