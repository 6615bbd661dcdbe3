"""Credentials given as options never show: not in reprs, system tables, ``paimon-py info``, errors or logs.

One rule (:mod:`paimon_core.redaction`) decides; the property test gives a table secret-bearing options of
every shape and looks for the secret's text at every exit. The options themselves keep their values.
"""

from __future__ import annotations

import json
import logging
import string
import uuid
from collections.abc import Callable

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_core import Catalog
from paimon_core import options as opts
from paimon_core.cli import main
from paimon_core.errors import ConfigError
from paimon_core.options import Options
from paimon_core.redaction import MASK, RedactingFilter, Redactor, is_secret_key, redact, redacted_options
from paimon_core.schema import SchemaManager, TableSchema
from paimon_core.storage import MemoryBackend
from paimon_core.table import open_table
from paimon_core.types import fields_from_arrow_schema

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])

# Characters a secret may hold wherever it is written: in a URI's user information, a query parameter, a
# connection string field, a JSON string. A prefix no output holds by chance.
SECRETS = st.text(string.ascii_letters + string.digits + "-_.~+/=!*()", min_size=6, max_size=24).map(
    lambda text: "Zq9" + text
)

# Where a secret goes: (option key, value holding it). Keys a schema written by another engine may hold, not
# only the ones this implementation declares.
SHAPES: dict[str, Callable[[str], tuple[str, str]]] = {
    "jdbc password": lambda s: ("jdbc.password", s),
    "jdbc uri user:secret@": lambda s: (
        "lock.jdbc.uri",
        f"jdbc:postgresql://paimon:{s}@db.example:5432/locks",
    ),
    "libpq password=": lambda s: ("lock.jdbc.uri", f"host=db.example user=paimon password={s} dbname=locks"),
    "uri ?password=": lambda s: ("lock.jdbc.uri", f"jdbc:postgresql://db.example/locks?user=u&password={s}"),
    "s3 secret key": lambda s: ("s3.secret-key", s),
    "s3 access key": lambda s: ("s3.access-key", s),
    "hadoop secret key": lambda s: ("fs.s3a.secret.key", s),
    "session token": lambda s: ("fs.s3a.session.token", s),
    "azure account key": lambda s: ("azure.account-key", s),
    "hadoop azure key": lambda s: ("fs.azure.account.key.acct.dfs.core.windows.net", s),
    "sas token": lambda s: ("azure.sas-token", f"sv=2022-11-02&ss=b&sig={s}"),
    "sas url": lambda s: ("azure.endpoint", f"https://acct.blob.core.windows.net/c?sv=2022-11-02&sig={s}"),
    "connection string": lambda s: (
        "azure.connection-string",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net",
    ),
    "credentials json": lambda s: (
        "gcs.credentials-json",
        json.dumps({"type": "service_account", "client_email": "a@b.iam", "private_key": s}),
    ),
    "gcs token": lambda s: ("gcs.token", s),
    "client secret": lambda s: ("azure.client-secret", s),
    "api key": lambda s: ("oss.api-key", s),
    "uri user:secret@ anywhere": lambda s: ("data-file.external-paths", f"s3://AKIAEXAMPLE:{s}@bucket/ext"),
}


def _table_with_options(options: dict[str, str]) -> str:
    """A table whose schema holds ``options`` as written (another engine may store any key); its path."""
    root = f"memory://redaction-{uuid.uuid4().hex}/wh"
    catalog = Catalog(root, MemoryBackend(), {})
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    fields, highest = fields_from_arrow_schema(SCHEMA)
    manager = SchemaManager(table.storage, table.path)
    latest = manager.latest()
    assert latest is not None
    assert manager.commit(
        TableSchema(latest.id + 1, tuple(fields), highest, options={**latest.options, **options})
    )
    return table.path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    secret=SECRETS,
    shapes=st.lists(st.sampled_from(sorted(SHAPES)), min_size=1, max_size=4, unique=True),
)
def test_secret_options_never_show(
    secret: str, shapes: list[str], capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    options = dict(SHAPES[shape](secret) for shape in shapes)
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        path = _table_with_options(options)
        table = open_table(path)
        table.append(pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
        rows = table.to_arrow().num_rows
        assert main(["info", path]) == 0
        assert main(["info", "--json", path]) == 0
        assert main(["info", path.replace("://", f"://someone:{secret}@", 1) + "-missing"]) == 1
    assert rows == 2
    assert all(table.options[key] == value for key, value in options.items())  # only display is redacted
    printed = capsys.readouterr()
    catalog_view = Catalog(path.rsplit("/db.db/", 1)[0], table.storage, {})
    exits = {
        "repr(options)": repr(table.options),
        "str(options)": str(table.options),
        "repr(schema)": repr(table.schema),
        "$options": str(catalog_view.get_table("db.t$options").to_arrow().to_pylist()),
        "$schemas": str(catalog_view.get_table("db.t$schemas").to_arrow().to_pylist()),
        "info text and json": printed.out,
        "errors": printed.err,
        "logs": caplog.text,
    }
    shown = {name: text for name, text in exits.items() if secret in text}
    assert shown == {}
    assert MASK in exits["$options"] and MASK in printed.out


@given(secret=SECRETS)
def test_an_invalid_option_value_shows_no_credential(secret: str) -> None:
    with pytest.raises(ConfigError, match="'bucket'") as caught:
        Options.of({"bucket": f"jdbc:postgresql://u:{secret}@h/db"}).get_option(opts.BUCKET)
    assert secret not in str(caught.value)


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("bucket-key", False),
        ("sequence.field", False),
        ("lock-key-max-length", False),
        ("commit.user-prefix", False),
        ("s3.key", True),
        ("fs.s3a.access.key", True),
        ("jdbc.password", True),
        ("azure.sas-token", True),
        ("gcs.credentials", True),
        ("fs.azure.account.key.acct.blob.core.windows.net", True),
    ],
)
def test_which_keys_are_secret(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret
    assert redacted_options({key: "value-123456"})[key] == (MASK if secret else "value-123456")


def test_one_rule_for_texts() -> None:
    assert redact("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert redact("postgresql://u:p/w?x@h/db") == "postgresql://u:***@h/db"  # unencoded, still hidden
    assert redact("host=h password='p w' user=u") == "host=h password=*** user=u"
    assert redact('{"private_key": "-----BEGIN\\nabc"}') == '{"private_key": "***"}'
    assert Redactor.of({"jdbc.password": "abcdef1"})("said abcdef1") == "said ***"


def test_cli_errors_never_repeat_a_given_credential(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from paimon_core import cli
    from paimon_core.errors import PaimonError

    secret = "Zq9-cli-s3cr3t"

    def fail(*_args: object, **_kwargs: object) -> None:
        raise PaimonError(f"the store refused key {secret}")

    monkeypatch.setattr(cli, "_target", fail)
    assert main(["info", "/wh/db.db/t", "--option", f"s3.secret-key={secret}"]) == 1
    err = capsys.readouterr().err
    assert "the store refused key ***" in err and secret not in err


def test_log_records_of_a_table_in_a_warehouse_uri_with_a_password_show_no_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "pw-" + uuid.uuid4().hex
    catalog = Catalog(f"memory://someone:{secret}@redaction-{uuid.uuid4().hex}/wh", MemoryBackend(), {})
    catalog.create_database("db")
    with caplog.at_level(logging.DEBUG):
        table = catalog.create_table("db.t", SCHEMA)
        table.append(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
        assert table.to_arrow().num_rows == 1
    assert any("commit attempt" in r.getMessage() for r in caplog.records)  # the path is logged...
    assert secret not in caplog.text  # ...without the password
    assert "someone:***@" in caplog.text


def test_every_module_of_the_packages_logs_through_the_redacting_filter() -> None:
    import importlib
    import pkgutil

    import paimon_core

    unfiltered = []
    for module in pkgutil.walk_packages(paimon_core.__path__, "paimon_core."):
        loaded = importlib.import_module(module.name)
        logger = getattr(loaded, "logger", None)
        if isinstance(logger, logging.Logger) and not any(
            isinstance(f, RedactingFilter) for f in logger.filters
        ):
            unfiltered.append(module.name)
    assert unfiltered == []
