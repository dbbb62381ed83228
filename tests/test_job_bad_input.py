"""Bad [[job]] input is one line naming the file, the key and the reason (issue 29
Deliver 5): hosts not in the fabric, two jobs sharing a host without saying so, and the
other mistakes a job table can hold."""
from __future__ import annotations

import pytest

from ibemu.scenario.read import scenario_from_dict
from ibemu.validate import ScenarioError

FABRIC = {"template": {"name": "fat_tree2", "radix": 4, "leaves": 2}, "scenario": {"name": "bad", "duration": "1ms"}}
AR = [{"type": "allreduce", "size": 4096}]


def load(*jobs):
    return scenario_from_dict(dict(FABRIC, job=list(jobs)), label="bad.toml")


@pytest.mark.parametrize("jobs,key,reason", [
    ([{"hosts": ["h0", "h99"], "ops": AR}], "job[0].hosts[1]", "unknown node 'h99'"),
    ([{"hosts": ["h0", "L0"], "ops": AR}], "job[0].hosts[1]", "is a switch"),
    ([{"hosts": {"first": 9}, "ops": AR}], "job[0].hosts.first", "only 4 HCAs"),
    ([{"name": "a", "hosts": ["h0", "h1"], "ops": AR}, {"name": "b", "hosts": ["h1", "h2"], "ops": AR}],
     "job[1].hosts", "'h1' is also a host of job 'a'"),
    ([{"hosts": ["h0", "h1", "h2"], "ops": [{"type": "allreduce", "algorithm": "recursive_doubling",
                                             "size": 10}]}], "job[0].ops", "power-of-two"),
    ([{"hosts": ["h0", "h1"], "ops": [{"type": "alltoall"}]}], "job[0].ops[0].size", "missing"),
    ([{"hosts": ["h0", "h1"], "ops": [{"type": "allreduce", "size": 8, "root": 1}]}], "job[0].ops[0].root",
     "only used with type 'broadcast'"),
    ([{"hosts": ["h0", "h1"], "ops": [{"type": "p2p", "messages": [[0, 2]]}]}], "job[0].ops[0].messages[0][1]",
     "between 0 and 1"),
    ([{"hosts": ["h0", "h1", "h2", "h3"], "ops": [{"type": "halo", "grid": [3, 2], "size": 8}]}],
     "job[0].ops[0].grid", "the job has 4"),
    ([{"hosts": ["h0", "h1"]}], "job[0].ops", "missing"),
])
def test_bad_job_is_one_line(jobs, key, reason):
    with pytest.raises(ScenarioError) as e:
        load(*jobs)
    line = str(e.value)
    assert "\n" not in line and line.startswith("bad.toml: %s: " % key) and reason in line, line


def test_jobs_may_share_hosts_when_both_say_so():
    scn = load({"name": "a", "hosts": ["h0", "h1"], "ops": AR, "shared": True},
               {"name": "b", "hosts": ["h1", "h0"], "ops": AR, "shared": True})
    assert [j.name for j in scn.jobs] == ["a", "b"] and len(scn.flows) == 4
