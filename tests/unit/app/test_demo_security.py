"""The demo against a secure local broker runs as admin: its client file becomes Settings."""

from __future__ import annotations

from pathlib import Path

from pipeline.app.demo import security_settings
from pipeline.core.settings import load_settings


def test_security_settings_from_a_client_file(tmp_path: Path) -> None:
    env = {"HARVEST_SECURITY_PROTOCOL": "SASL_SSL", "HARVEST_SASL_MECHANISM": "SCRAM-SHA-512",
           "HARVEST_SASL_USERNAME": "admin", "HARVEST_SASL_PASSWORD": "pw",
           "HARVEST_SSL_CA_LOCATION": str(tmp_path / "ca.pem")}
    settings = load_settings(cache_dir=tmp_path).model_copy(update=security_settings(env))
    conf = settings.kafka_client_config()
    assert dict(conf) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                          "sasl.username": "admin", "sasl.password": "pw",
                          "ssl.ca.location": str(tmp_path / "ca.pem")}
    assert "pw" not in repr(settings.sasl_password)
    assert security_settings({}) == {}
