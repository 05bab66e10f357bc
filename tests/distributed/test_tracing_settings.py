"""Turning tracing on for workers: ACE_OTLP_ENDPOINT, OpenTelemetry's own variable, --otlp-endpoint."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ace_workers.cli import app
from ace_workers.distributed.errors import InvalidSettingError
from ace_workers.distributed.settings import WorkerSettings
from tests.support.cli import said


def test_the_standard_otel_variable_is_the_default_and_ace_otlp_endpoint_wins() -> None:
    standard = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert WorkerSettings.from_env(standard).otlp_endpoint == "http://collector:4318"
    ours = {**standard, "ACE_OTLP_ENDPOINT": "https://other:4318"}
    assert WorkerSettings.from_env(ours).otlp_endpoint == "https://other:4318"
    assert WorkerSettings.from_env({}).otlp_endpoint is None


def test_an_endpoint_that_is_not_http_is_refused_naming_the_variable() -> None:
    with pytest.raises(InvalidSettingError, match=r"ACE_OTLP_ENDPOINT='grpc://collector:4317': unsupported"):
        WorkerSettings.from_env({"ACE_OTLP_ENDPOINT": "grpc://collector:4317"})


def test_the_worker_refuses_a_bad_otlp_endpoint_before_it_starts(clean_env: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(app, ["worker", "--otlp-endpoint", "collector:4318"])
    assert result.exit_code == 2
    assert "an OTLP/HTTP collector URL is http:// or https://" in said(result.output)


def test_the_mcp_command_has_help_and_refuses_an_unknown_transport(clean_env: pytest.MonkeyPatch) -> None:
    assert CliRunner().invoke(app, ["mcp", "--help"]).exit_code == 0
    result = CliRunner().invoke(app, ["mcp", "--transport", "carrier-pigeon"])
    assert result.exit_code == 2
    assert "'carrier-pigeon': use stdio or http" in said(result.output)
