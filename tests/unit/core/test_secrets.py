"""ClientOptions keep secrets usable by clients but out of every repr; scrub masks text."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from pipeline.core.errors import KafkaAuthenticationError
from pipeline.core.secrets import MASK, ClientOptions, is_secret_key, scrub
from pipeline.core.settings import load_settings


def test_client_options_give_plain_values_and_mask_reprs() -> None:
    jaas = 'org.x.ScramLoginModule required username="job" password="p\\"w";'
    opts = ClientOptions({"security.protocol": "SASL_SSL", "sasl.password": "hunter2",
                          "sasl.jaas.config": SecretStr(jaas)})
    assert dict(opts) == {"security.protocol": "SASL_SSL", "sasl.password": "hunter2",
                          "sasl.jaas.config": jaas}
    assert {**opts}["sasl.password"] == "hunter2"
    for text in (repr(opts), str(opts), str(opts.redacted()), f"{opts}"):
        assert "hunter2" not in text and "p\\\"w" not in text and MASK in text
    assert opts == {"security.protocol": "SASL_SSL", "sasl.password": "hunter2",
                    "sasl.jaas.config": jaas}
    assert set(opts.secrets()) == {"hunter2", jaas, 'p\\"w'}


def test_secret_keys_also_with_the_spark_prefix() -> None:
    assert is_secret_key("kafka.sasl.jaas.config") and is_secret_key("sasl.password")
    assert not is_secret_key("kafka.sasl.mechanism")


def test_scrub_masks_every_secret_longest_first() -> None:
    assert scrub("a pw and pw2 and nothing", ["pw", "pw2", ""]) == (
        f"a {MASK} and {MASK} and nothing")


def test_settings_client_config_adds_the_ca_and_hides_the_password(tmp_path: Path) -> None:
    settings = load_settings(cache_dir=tmp_path, security_protocol="SASL_SSL",
                             sasl_mechanism="SCRAM-SHA-512", sasl_username="producer",
                             sasl_password="s3cret", ssl_ca_location=tmp_path / "ca.pem")
    conf = settings.kafka_client_config()
    assert conf["ssl.ca.location"] == str(tmp_path / "ca.pem")
    assert conf["sasl.password"] == "s3cret"
    assert "s3cret" not in repr(conf) and "s3cret" not in repr(settings)


@pytest.mark.parametrize("missing", [{"sasl_username": "u"}, {"sasl_password": "p"}, {}])
def test_sasl_without_credentials_is_an_authentication_error(
        tmp_path: Path, missing: dict[str, str]) -> None:
    settings = load_settings(cache_dir=tmp_path, security_protocol="SASL_SSL", **missing)
    with pytest.raises(KafkaAuthenticationError, match="HARVEST_SASL_USERNAME"):
        settings.kafka_client_config()
