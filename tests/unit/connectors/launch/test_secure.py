"""The secure broker's pure parts: properties overlay, credentials, client files, ACLs."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from connectors.launch import secure as sec
from connectors.launch.broker_config import BrokerConfig, Ports, render_properties
from pipeline.core.errors import InfraError
from pipeline.core.settings import Settings

INFRA = Settings().infra_dir


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_credentials_round_trip_private_and_never_in_a_repr(tmp_path: Path) -> None:
    creds = sec.Credentials.generate()
    assert set(creds.passwords) == {*sec.PRINCIPALS, sec.BROKER_USER}
    assert len({p.get_secret_value() for p in creds.passwords.values()}) == 5
    path = tmp_path / "secure" / "credentials.json"
    creds.save(path)
    assert _mode(path) == 0o600
    again = sec.Credentials.load(path)
    assert again.passwords["job"].get_secret_value() == creds.passwords["job"].get_secret_value()
    for secret in creds.secrets():
        assert secret not in repr(creds) and secret not in repr(again)


def test_damaged_credentials_say_how_to_start_over(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    path.write_text('{"passwords": {"admin": "x"}}')
    with pytest.raises(InfraError, match="remove"):
        sec.Credentials.load(path)


def test_overlay_replaces_keys_and_keeps_the_rest() -> None:
    base = "# c\na=1\nlisteners=PLAINTEXT://x\nb=2\n"
    out = sec.overlay_properties(base, "listeners=SASL_SSL://y\nc=3")
    assert out.splitlines()[:3] == ["# c", "a=1", "b=2"]
    assert "listeners=PLAINTEXT://x" not in out and "listeners=SASL_SSL://y" in out


def test_rendered_secure_properties_have_no_plaintext_client_listener(tmp_path: Path) -> None:
    config = BrokerConfig(kafka_dir=tmp_path / "kafka", jars_dir=tmp_path, infra_dir=INFRA,
                          secure=True)
    creds = sec.Credentials.generate()
    base = render_properties(config.template.read_text(), Ports(19092, 19093), config.data_dir)
    extra = sec.render_secure_overlay(config.secure_template.read_text(),
                                      config.secure_layout, creds, 19092, 19093)
    props = dict(line.split("=", 1) for line in sec.overlay_properties(base, extra).splitlines()
                 if "=" in line and not line.startswith("#"))
    assert props["listeners"] == "SASL_SSL://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["advertised.listeners"] == "SASL_SSL://127.0.0.1:19092"
    assert props["listener.security.protocol.map"] == (
        "SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT")
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["super.users"] == "User:broker;User:admin"
    assert props["log.dirs"] == str(tmp_path / "kafka" / "secure" / "data")
    assert config.data_dir != BrokerConfig(kafka_dir=tmp_path / "kafka", jars_dir=tmp_path,
                                           infra_dir=INFRA).data_dir
    assert "PLAINTEXT://" not in props["listeners"]


def test_client_env_files_are_private_unquoted_and_complete(tmp_path: Path) -> None:
    layout = sec.SecureLayout(tmp_path / "kafka")
    creds = sec.Credentials.generate()
    paths = sec.write_client_files(layout, creds, "127.0.0.1:19092")
    assert [p.name for p in paths] == ["admin.env", "producer.env", "job.env", "reader.env"]
    assert _mode(layout.clients_dir) == 0o700
    env = sec.read_env_file(layout.client_file("producer"))
    assert env == {
        "HARVEST_BOOTSTRAP_SERVERS": "127.0.0.1:19092",
        "HARVEST_SECURITY_PROTOCOL": "SASL_SSL",
        "HARVEST_SASL_MECHANISM": "SCRAM-SHA-512",
        "HARVEST_SASL_USERNAME": "producer",
        "HARVEST_SASL_PASSWORD": creds.passwords["producer"].get_secret_value(),
        "HARVEST_SSL_CA_LOCATION": str(layout.ca_pem.resolve()),
    }
    for path in paths:
        assert _mode(path) == 0o600
        assert '"' not in path.read_text() and "'" not in path.read_text().split("\n", 1)[1]


def test_scram_args_cover_every_principal() -> None:
    creds = sec.Credentials.generate()
    args = sec.scram_format_args(creds)
    assert args[::2] == ["--add-scram"] * 5
    names = [a.split("name=")[1].split(",")[0] for a in args[1::2]]
    assert names == ["broker", "admin", "producer", "job", "reader"]


def _grants(principal: str) -> set[tuple[str, str]]:
    return {(a.resource, a.operation) for a in sec.ACLS if a.principal == f"User:{principal}"}


def test_acls_grant_each_principal_exactly_its_rights() -> None:
    assert _grants("producer") == {("topic", "WRITE"), ("topic", "CREATE"),
                                   ("topic", "DESCRIBE")}
    assert _grants("job") == {("topic", "READ"), ("topic", "WRITE"), ("topic", "CREATE"),
                              ("topic", "DESCRIBE"), ("group", "READ"),
                              ("transactional_id", "WRITE"), ("transactional_id", "DESCRIBE")}
    assert _grants("reader") == {("topic", "READ"), ("topic", "DESCRIBE"), ("group", "READ")}
    assert _grants("admin") == set()  # a super user
    assert all(a.name == "*" for a in sec.ACLS)
    for acl in sec.ACLS:
        acl.binding()  # every one converts to a confluent-kafka binding
