"""The local broker's secure mode (`harvest kafka up --secure`): TLS material, SCRAM
credentials, the SASL_SSL properties overlay, ACLs and the per-principal client files.

Layout under ``Settings.kafka_dir`` (``.cache/kafka``)::

    secure/data/           the secure broker's own KRaft data (never shared with plaintext)
    secure/tls/ca.pem      the local CA certificate (clients trust it: HARVEST_SSL_CA_LOCATION)
    secure/tls/ca.p12      the CA's key pair (signs the broker certificate)
    secure/tls/broker.p12  the broker's key + certificate (SAN IP:127.0.0.1, DNS:localhost)
    secure/credentials.json  every principal's password + the keystore password (0600)
    clients/<principal>.env  HARVEST_* settings of admin, producer, job and reader (0600)

Passwords are random (``secrets.token_urlsafe``) and made together with the data
directory: SCRAM credentials are written into the KRaft metadata when it is formatted
(``kafka-storage format --add-scram``), so a fresh data directory gets fresh passwords.

Listeners: ``SASL_SSL`` (SCRAM-SHA-512 over TLS) is the only client listener and also the
inter-broker one, authenticating as the internal super user ``broker`` (a separate
plaintext inter-broker listener would be a second, unauthenticated way in); the KRaft
``CONTROLLER`` listener stays on loopback but is ``SASL_PLAINTEXT`` with the PLAIN
mechanism and a static ``broker`` login (SCRAM cannot authenticate controllers: its
credentials live in the metadata the controller serves), so no principal is anonymous
and ``User:ANONYMOUS`` needs no rights.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import string
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from connectors.io.admin import Acl
from pipeline.core.errors import InfraError
from pipeline.core.logging import get_logger
from pipeline.core.secrets import ClientOptions

log = get_logger(__name__)

MECHANISM = "SCRAM-SHA-512"
PROTOCOL = "SASL_SSL"
#: the principals a user gets client files for (``admin`` is a super user)
PRINCIPALS = ("admin", "producer", "job", "reader")
#: the broker's own principal (inter-broker + controller), a super user; no client file
BROKER_USER = "broker"
SUPER_USERS = (BROKER_USER, "admin")

_TOPIC_WRITE = ("WRITE", "CREATE", "DESCRIBE")
#: What each principal may do (ALLOW, on every topic / group). No IDEMPOTENT_WRITE on the
#: cluster: since Kafka 3.0 (KIP-679) WRITE on any topic lets a principal initialize an
#: idempotent producer — `harvest produce` and the Spark sink are idempotent producers.
#: ``job`` and ``reader`` READ groups: the Spark source's ``spark-kafka-source-*`` groups,
#: `harvest consume`'s ``harvest-consume-*`` groups and any ``--group`` name. ``job``
#: WRITEs transactional ids: the exactly-once sink's ``harvest-<query id>``.
ACLS: tuple[Acl, ...] = (
    *(Acl("User:producer", "topic", op) for op in _TOPIC_WRITE),
    *(Acl("User:job", "topic", op) for op in ("READ", *_TOPIC_WRITE)),
    Acl("User:job", "group", "READ"),
    Acl("User:job", "transactional_id", "WRITE"),
    Acl("User:job", "transactional_id", "DESCRIBE"),
    Acl("User:reader", "topic", "READ"),
    Acl("User:reader", "topic", "DESCRIBE"),
    Acl("User:reader", "group", "READ"),
)


@dataclass(frozen=True)
class SecureLayout:
    """Where the secure broker's files live (see the module docstring)."""

    kafka_dir: Path
    #: where ``clients/`` is (default ``kafka_dir``; the cluster's layout lives under
    #: ``kafka/cluster`` but its client files go to ``kafka/clients`` like the broker's)
    clients_home: Path | None = None

    @property
    def secure_dir(self) -> Path:
        return self.kafka_dir / "secure"

    @property
    def data_dir(self) -> Path:
        return self.secure_dir / "data"

    @property
    def tls_dir(self) -> Path:
        return self.secure_dir / "tls"

    @property
    def ca_pem(self) -> Path:
        return self.tls_dir / "ca.pem"

    @property
    def ca_store(self) -> Path:
        return self.tls_dir / "ca.p12"

    @property
    def keystore(self) -> Path:
        return self.tls_dir / "broker.p12"

    @property
    def credentials_file(self) -> Path:
        return self.secure_dir / "credentials.json"

    @property
    def clients_dir(self) -> Path:
        return (self.clients_home or self.kafka_dir) / "clients"

    def client_file(self, principal: str) -> Path:
        return self.clients_dir / f"{principal}.env"


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the owner only (created 0600, never wider)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    path.chmod(0o600)


@dataclass(frozen=True)
class Credentials:
    """The passwords of one secure data directory (``SecretStr``: never in a repr)."""

    passwords: Mapping[str, SecretStr]
    keystore_password: SecretStr

    @classmethod
    def generate(cls) -> Credentials:
        """Fresh random passwords for every principal and the keystores."""
        users = (*PRINCIPALS, BROKER_USER)
        return cls({u: SecretStr(secrets.token_urlsafe(24)) for u in users},
                   SecretStr(secrets.token_urlsafe(24)))

    def password(self, principal: str) -> SecretStr:
        try:
            return self.passwords[principal]
        except KeyError:
            raise InfraError(f"no credentials for principal {principal!r}") from None

    def save(self, path: Path) -> None:
        """Write the credentials file (0600)."""
        data = {"passwords": {u: p.get_secret_value() for u, p in self.passwords.items()},
                "keystore_password": self.keystore_password.get_secret_value()}
        write_private(path, json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> Credentials:
        """Read the credentials file; :class:`InfraError` when missing or damaged."""
        try:
            data = json.loads(path.read_text())
            passwords = {str(u): SecretStr(str(p)) for u, p in data["passwords"].items()}
            creds = cls(passwords, SecretStr(str(data["keystore_password"])))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InfraError(
                f"cannot read the secure broker's credentials {path}: {exc}; stop the broker "
                f"and remove {path.parent} to start over with a new data directory"
            ) from exc
        for user in (*PRINCIPALS, BROKER_USER):
            creds.password(user)
        return creds

    def secrets(self) -> list[str]:
        """Every secret value (for scrubbing text)."""
        return [p.get_secret_value() for p in self.passwords.values()] + [
            self.keystore_password.get_secret_value()]


def keytool_for(java: Path) -> Path:
    """The ``keytool`` next to ``java`` (symlinks resolved), else the one on PATH."""
    beside = java.resolve().parent / "keytool"
    if beside.is_file():
        return beside
    found = shutil.which("keytool")
    if found is None:
        raise InfraError(f"keytool not found next to {java} nor on PATH (it ships with the JDK)")
    return Path(found)


def make_certificates(keytool: Path, layout: SecureLayout, store_password: SecretStr,
                      *, days: int = 3650) -> None:
    """A local CA and a broker certificate it signs (EC P-256, SAN 127.0.0.1/localhost),
    with Java's keytool; the store password goes through the environment, never argv."""
    tls = layout.tls_dir
    _private_dir(tls)
    for old in tls.iterdir():
        old.unlink()
    env = {**os.environ, "HARVEST_STOREPASS": store_password.get_secret_value()}
    store = ["-storetype", "PKCS12", "-storepass:env", "HARVEST_STOREPASS"]
    ca, broker = str(layout.ca_store), str(layout.keystore)
    csr, crt = str(tls / "broker.csr"), str(tls / "broker.crt")
    key = ["-keyalg", "EC", "-groupname", "secp256r1", "-validity", str(days)]
    steps = [
        ["-genkeypair", "-alias", "ca", *key, "-dname", "CN=harvest local CA",
         "-ext", "bc:c", "-keystore", ca, *store],
        ["-genkeypair", "-alias", "broker", *key, "-dname", "CN=localhost",
         "-keystore", broker, *store],
        ["-certreq", "-alias", "broker", "-keystore", broker, *store, "-file", csr],
        ["-gencert", "-alias", "ca", "-keystore", ca, *store, "-infile", csr, "-outfile", crt,
         "-rfc", "-validity", str(days), "-ext", "SAN=IP:127.0.0.1,DNS:localhost",
         "-ext", "EKU=serverAuth,clientAuth"],
        ["-exportcert", "-alias", "ca", "-keystore", ca, *store, "-rfc",
         "-file", str(layout.ca_pem)],
        ["-importcert", "-alias", "ca", "-file", str(layout.ca_pem), "-keystore", broker,
         *store, "-noprompt"],
        ["-importcert", "-alias", "broker", "-file", crt, "-keystore", broker, *store,
         "-noprompt"],
    ]
    for args in steps:
        try:
            done = subprocess.run([str(keytool), *args], capture_output=True, text=True,
                                  env=env, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InfraError(f"keytool {args[0]} failed to run: {exc}") from exc
        if done.returncode != 0:
            raise InfraError(f"keytool {args[0]} exited with code {done.returncode}: "
                             f"{(done.stdout + done.stderr).strip()[-1500:]}")
    for leftover in (csr, crt):
        Path(leftover).unlink(missing_ok=True)
    for path in tls.iterdir():
        path.chmod(0o600)
    layout.ca_pem.chmod(0o644)  # the CA certificate is public
    log.info("tls material created", ca=str(layout.ca_pem), keystore=str(layout.keystore))


def overlay_properties(base: str, extra: str) -> str:
    """``base`` without the keys ``extra`` sets, followed by ``extra``."""
    keys = {line.split("=", 1)[0].strip() for line in extra.splitlines()
            if "=" in line and not line.lstrip().startswith("#")}
    kept = [line for line in base.splitlines()
            if line.lstrip().startswith("#") or "=" not in line
            or line.split("=", 1)[0].strip() not in keys]
    return "\n".join(kept).rstrip() + "\n\n" + extra.strip() + "\n"


def render_secure_overlay(template: str, layout: SecureLayout, creds: Credentials,
                          broker_port: int, controller_port: int) -> str:
    """Fill ``infra/kafka/secure.properties.template`` (``string.Template``)."""
    try:
        return string.Template(template).substitute(
            broker_port=broker_port, controller_port=controller_port,
            broker_user=BROKER_USER,
            broker_password=creds.password(BROKER_USER).get_secret_value(),
            keystore=layout.keystore,
            keystore_password=creds.keystore_password.get_secret_value(),
            truststore=layout.ca_pem,
            super_users=";".join(f"User:{u}" for u in SUPER_USERS),
            mechanism=MECHANISM,
        )
    except (KeyError, ValueError) as exc:
        raise InfraError(f"bad placeholder in the secure broker template: {exc}") from exc


def scram_format_args(creds: Credentials) -> list[str]:
    """``--add-scram`` arguments of ``kafka-storage format`` for every principal."""
    args: list[str] = []
    for user in (BROKER_USER, *PRINCIPALS):
        password = creds.password(user).get_secret_value()
        args += ["--add-scram", f"{MECHANISM}=[name={user},password={password}]"]
    return args


def client_options(layout: SecureLayout, creds: Credentials, principal: str) -> ClientOptions:
    """librdkafka settings of ``principal`` (the launcher probes and grants as ``admin``)."""
    return ClientOptions({
        "security.protocol": PROTOCOL,
        "sasl.mechanism": MECHANISM,
        "sasl.username": principal,
        "sasl.password": creds.password(principal),
        "ssl.ca.location": str(layout.ca_pem),
    })


def client_env(layout: SecureLayout, creds: Credentials, principal: str,
               bootstrap: str) -> str:
    """The ``clients/<principal>.env`` text: unquoted ``KEY=value`` lines, so that
    ``set -a; . clients/<principal>.env; set +a`` configures every harvest command."""
    lines = [
        f"# harvest client settings of principal {principal!r} for the local secure broker",
        f"HARVEST_BOOTSTRAP_SERVERS={bootstrap}",
        f"HARVEST_SECURITY_PROTOCOL={PROTOCOL}",
        f"HARVEST_SASL_MECHANISM={MECHANISM}",
        f"HARVEST_SASL_USERNAME={principal}",
        f"HARVEST_SASL_PASSWORD={creds.password(principal).get_secret_value()}",
        f"HARVEST_SSL_CA_LOCATION={layout.ca_pem.resolve()}",
    ]
    return "\n".join(lines) + "\n"


def write_client_files(layout: SecureLayout, creds: Credentials, bootstrap: str) -> list[Path]:
    """Write ``clients/<principal>.env`` (0600) for every principal; returns the paths."""
    _private_dir(layout.clients_dir)
    paths = []
    for principal in PRINCIPALS:
        path = layout.client_file(principal)
        write_private(path, client_env(layout, creds, principal, bootstrap))
        paths.append(path)
    return paths


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=value`` lines of a client file (comments and blank lines skipped)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out
