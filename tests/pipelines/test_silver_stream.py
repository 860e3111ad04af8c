"""Which trigger a ``--stream`` run uses, the same in the CLI and in ``jobs/silver_job.py``."""

from __future__ import annotations

import pytest

from cdc_sources.spi import ConfigError
from jobs import silver_job
from pipelines.cli import EXIT_CONFIG, main
from pipelines.silver_stream import stream_trigger
from tests.support.silver_processes import pipeline_with_silver


@pytest.mark.parametrize(("given", "once", "expected"), [
    (None, False, "processing_time"),
    (None, True, "available_now"),
    ("available-now", False, "available_now"),
    ("available-now", True, "available_now"),
    ("processing-time", False, "processing_time"),
])
def test_stream_trigger_from_the_command_line(given, once, expected):
    assert stream_trigger(given, once=once) == expected


def test_once_with_a_processing_time_trigger_is_refused():
    with pytest.raises(ConfigError, match="--once with --stream means --trigger available-now"):
        stream_trigger("processing-time", once=True)


@pytest.mark.parametrize("command", ["cli", "job"])
def test_both_command_lines_refuse_once_with_processing_time_before_starting_spark(command, tmp_path, capsys):
    config = tmp_path / "pipeline.yaml"
    config.write_text(pipeline_with_silver(str(tmp_path / "lake"), "host=x port=5432 dbname=db user=u", slot="s",
                                           engine="spark"))
    args = ["-c", str(config), "--stream", "--once", "--trigger", "processing-time"]
    status = main(["silver", *args]) if command == "cli" else silver_job.main(args)
    assert status == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "--once with --stream means --trigger available-now" in err and "Traceback" not in err
    assert not (tmp_path / "lake" / "silver").exists()
