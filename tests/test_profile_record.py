"""gpubench/results/profile.py: a profile in a point's details through a results file (schema 5), a corrupt one as
one line, and a version-4 file without profiles."""

import json

import pytest

from gpubench import results
from gpubench.results.model import SCHEMA_VERSION
from ncu_fakes import profiled_run

# --- the results file -----------------------------------------------------------------------------------------




def test_a_profile_survives_a_save_and_load(make_run, tmp_path):
    run = profiled_run(make_run)
    again = results.load(results.save(run, tmp_path / "p.json"))
    assert again == run and again.schema_version == SCHEMA_VERSION  # the profile came with version 5
    assert again.points[2].details.profile.stalls == (("barrier", 6.0),)


def test_a_corrupt_profile_is_one_line(make_run, tmp_path):
    import json

    path = results.save(profiled_run(make_run), tmp_path / "p.json")
    data = json.loads(path.read_text())
    data["points"][2]["details"]["profile"]["metrics"]["sm_pct"] = "high"
    path.write_text(json.dumps(data))
    with pytest.raises(Exception, match=r"corrupt: point 2 .*profile metrics must map metric names to finite numbers"):
        results.load(path)


def test_a_version_4_file_loads_without_profiles(make_run, tmp_path):
    import json

    path = results.save(make_run(), tmp_path / "old.json")
    data = json.loads(path.read_text())
    data["schema_version"] = 4
    path.write_text(json.dumps(data))
    run = results.load(path)
    assert run.schema_version == SCHEMA_VERSION and all(p.details.profile is None for p in run.points)
