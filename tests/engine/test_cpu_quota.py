"""The default number of search threads follows the container's CPU quota (``docker
--cpus``, a Kubernetes CPU limit), read from fake cgroup file systems here."""

from __future__ import annotations

import os

import pytest

from boxfish.engine import analysis
from boxfish.engine.analysis import cpu_quota, usable_cores


def write(path, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_cgroup_v2_quota_of_the_process_cgroup_and_its_ancestors(tmp_path):
    cgroups = tmp_path / "cgroup"
    write(cgroups, "0::/kubepods/pod1/app\n")
    root = tmp_path / "fs"
    write(root / "kubepods/pod1/app/cpu.max", "max 100000\n")
    write(root / "kubepods/pod1/cpu.max", "150000 100000\n")  # the pod's limit: 1.5 CPUs
    write(root / "kubepods/cpu.max", "400000 100000\n")
    assert cpu_quota(str(root), str(cgroups)) == 1.5


def test_cgroup_v2_without_a_quota(tmp_path):
    cgroups = tmp_path / "cgroup"
    write(cgroups, "0::/\n")
    write(tmp_path / "fs/cpu.max", "max 100000\n")
    assert cpu_quota(str(tmp_path / "fs"), str(cgroups)) is None


def test_cgroup_v1_quota_in_a_container_whose_listed_path_is_the_hosts(tmp_path):
    # Inside a container /proc/self/cgroup names the host's path; the mount holds the
    # container's own cgroup at its root.
    cgroups = tmp_path / "cgroup"
    write(cgroups, "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n")
    root = tmp_path / "fs"
    write(root / "cpu,cpuacct/cpu.cfs_quota_us", "200000\n")
    write(root / "cpu,cpuacct/cpu.cfs_period_us", "100000\n")
    assert cpu_quota(str(root), str(cgroups)) == 2.0


def test_cgroup_v1_unlimited_and_unreadable(tmp_path):
    cgroups = tmp_path / "cgroup"
    write(cgroups, "1:cpu:/\n")
    write(tmp_path / "fs/cpu/cpu.cfs_quota_us", "-1\n")
    write(tmp_path / "fs/cpu/cpu.cfs_period_us", "100000\n")
    assert cpu_quota(str(tmp_path / "fs"), str(cgroups)) is None
    assert cpu_quota(str(tmp_path / "fs"), str(tmp_path / "missing")) is None


@pytest.mark.parametrize("quota, expected", [("50000 100000", 1), ("150000 100000", 2),
                                             ("max 100000", None)])
def test_usable_cores_is_capped_by_the_quota_rounded_up(tmp_path, monkeypatch, quota, expected):
    write(tmp_path / "cgroup", "0::/\n")
    write(tmp_path / "fs/cpu.max", quota + "\n")
    monkeypatch.setattr(analysis, "CGROUP_ROOT", str(tmp_path / "fs"))
    monkeypatch.setattr(analysis, "PROC_CGROUP", str(tmp_path / "cgroup"))
    affinity = len(os.sched_getaffinity(0))
    assert usable_cores() == (affinity if expected is None else min(affinity, expected))
