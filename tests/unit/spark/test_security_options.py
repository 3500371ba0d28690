"""The Spark job's Kafka security options: truststore, JAAS quoting, secrets masked."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.errors import KafkaAuthenticationError
from pipeline.core.settings import load_settings
from pipeline.spark.submit import java_client_options, job_config
from pipeline.spec.model import parse_spec


def _settings(tmp_path: Path, password: str = "s3cret") -> object:
    return load_settings(cache_dir=tmp_path, security_protocol="SASL_SSL",
                         sasl_mechanism="SCRAM-SHA-512", sasl_username="job",
                         sasl_password=password, ssl_ca_location=tmp_path / "ca.pem")


def test_java_options_carry_a_pem_truststore_and_a_quoted_jaas_login(tmp_path: Path) -> None:
    opts = java_client_options(_settings(tmp_path, 'a"b\\c'))  # type: ignore[arg-type]
    assert opts["ssl.truststore.type"] == "PEM"
    assert opts["ssl.truststore.location"] == str(tmp_path / "ca.pem")
    assert opts["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="job" password="a\\"b\\\\c";')
    assert 'a"b' not in repr(opts)
    assert 'a\\"b\\\\c' in opts.secrets()


def test_job_config_never_shows_the_password(tmp_path: Path) -> None:
    spec = parse_spec({"join": {"streams": ["s1", "s2"], "window_ms": 1000,
                                "predicate": "band", "attribute": "value", "epsilon": 1.0}})
    cfg = job_config(spec, _settings(tmp_path), checkpoint=str(tmp_path / "ck"))  # type: ignore[arg-type]
    assert cfg.client_options["sasl.jaas.config"].endswith('password="s3cret";')
    for text in (repr(cfg), str(cfg.snapshot())):
        assert "s3cret" not in text


def test_sasl_without_credentials_fails_before_spark(tmp_path: Path) -> None:
    settings = load_settings(cache_dir=tmp_path, security_protocol="SASL_SSL",
                             sasl_mechanism="SCRAM-SHA-512")
    with pytest.raises(KafkaAuthenticationError, match="HARVEST_SASL_PASSWORD"):
        java_client_options(settings)
