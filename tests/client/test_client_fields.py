"""The `holdout` command fills a benchmark's entry fields (issue 38): `--field key=value`, repeatable, on submit
and on publish; the server checks each value by its field's type and its refusal names the field."""

from __future__ import annotations

import sys

from app.services.catalog import entry_fields
from tests.client.conftest import CLIENT
from tests.support.api_world import build_world

sys.path.insert(0, str(CLIENT))
from holdout_client import cli  # noqa: E402  (the client is not installed in this venv)


def test_fields_go_with_the_upload_and_the_publication_and_a_bad_one_is_named(
    app, served, capsys, monkeypatch, tmp_path
):
    world = build_world(app, n=120)
    with app.app_context():
        for spec in (
            entry_fields.checked_spec("zero_shot", "Zero-shot", "yesno"),
            entry_fields.checked_spec("parameters", "Parameters", "integer", unit="parameters", required=True),
        ):
            entry_fields.add_field("nlvr2", spec)
    monkeypatch.setenv("HOLDOUT_TOKEN", world.tokens["member"])
    (tmp_path / "p.csv").write_bytes(world.predictions())
    upload = ("submit", "nlvr2", "dev", str(tmp_path / "p.csv"), "--model", "CliNet")
    assert cli.main([*upload, "--field", "zero_shot=perhaps"]) != 0
    assert "(fields.zero_shot) must be yes or no" in capsys.readouterr().err
    assert cli.main([*upload, "--field", "nonsense"]) != 0
    assert "expected key=value" in capsys.readouterr().err
    assert cli.main([*upload, "--field", "zero_shot=yes"]) == 0
    sid = int(capsys.readouterr().out.split()[1])
    assert cli.main(["publish", str(sid), "--description", "d"]) != 0
    assert "(fields.parameters) is required to publish" in capsys.readouterr().err
    assert cli.main(["publish", str(sid), "--description", "d", "--field", "parameters=7000000000"]) == 0
    capsys.readouterr()
    assert cli.main(["show", str(sid)]) == 0
    out = capsys.readouterr().out
    assert "zero_shot:    yes" in out and "parameters:   7000000000" in out
