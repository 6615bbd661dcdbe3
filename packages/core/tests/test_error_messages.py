"""What a user sees when something is wrong: a missing warehouse, a failing store, credentials kept out."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Mapping
from pathlib import Path

import pytest

from paimon_core import Catalog, WarehouseNotFoundError
from paimon_core.cli import main
from paimon_core.errors import (
    CatalogError,
    PaimonError,
    StorageError,
    StorageFileNotFoundError,
    StorageNotADirectoryError,
    StoragePermissionError,
    error_line,
)
from paimon_core.storage import (
    BackendSpec,
    FileInfo,
    MemoryBackend,
    RedactedCause,
    Redactor,
    StorageBackend,
    StorageRegistry,
    create_plugin_manager,
    hookimpl,
    set_default_registry,
)

# --- the warehouse ------------------------------------------------------------------------------------------


def test_a_missing_warehouse_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    (tmp_path / "warehouse").mkdir()
    typo = tmp_path / "warehuose"
    with pytest.raises(WarehouseNotFoundError) as raised:
        Catalog.open(str(typo))
    assert str(raised.value) == (
        f"warehouse '{typo}' does not exist; did you mean '{tmp_path / 'warehouse'}'? "
        "(Catalog.open(uri, create=True) creates a new one)"
    )
    assert isinstance(raised.value, LookupError) and raised.value.warehouse == str(typo)
    assert not typo.exists()
    nowhere = tmp_path / "no" / "such" / "path"
    with pytest.raises(WarehouseNotFoundError, match=r"^warehouse '.*/no/such/path' does not exist \("):
        Catalog.open(str(nowhere))
    assert not (tmp_path / "no").exists()


def test_create_makes_a_new_warehouse_and_opens_an_existing_one(tmp_path: Path) -> None:
    new = tmp_path / "a" / "new" / "warehouse"
    Catalog.open(str(new), create=True).create_database("db")
    assert (new / "db.db").is_dir()
    assert Catalog.open(str(new), create=True).list_databases() == ["db"]
    assert Catalog.open(str(new)).list_databases() == ["db"]
    memory = "memory://errors-test/wh"
    with pytest.raises(WarehouseNotFoundError):
        Catalog.open(memory)
    Catalog.open(memory, create=True)
    assert Catalog.open(memory).list_databases() == []


def test_a_file_is_no_warehouse(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("not a warehouse")
    with pytest.raises(CatalogError, match=r"^warehouse '.*notes\.txt' is a file, not a directory$"):
        Catalog.open(str(file), create=True)


# --- storage failures ---------------------------------------------------------------------------------------


def test_a_local_failure_names_the_backend_call_path_and_cause(tmp_path: Path) -> None:
    file = tmp_path / "afile"
    file.write_text("x")
    with pytest.raises(StorageNotADirectoryError) as raised:
        Catalog.open(str(file / "wh"), create=True)
    assert str(raised.value) == f"file: cannot look up {file}/wh: Not a directory"
    assert isinstance(raised.value, NotADirectoryError) and raised.value.path == f"{file}/wh"
    assert isinstance(raised.value.__cause__, NotADirectoryError)
    assert raised.value.__context__ is None


SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SAS_SIGNATURE = "sig=Zm9vYmFyYmF6cXV4cXV1eA%3D%3D"


class SdkError(Exception):
    """What a cloud SDK raises: not an OSError, and its text may echo a request, credentials included."""


class ChattyBackend(MemoryBackend):
    """A memory store whose SDK echoes its request on failure, with the signed URL and the key in it."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.secret = options["chatty.secret-key"]

    def _check(self, path: str) -> None:
        if "/absent" in path:
            raise FileNotFoundError(f"no object at {path}")
        if "/denied" in path:
            raise PermissionError(f"access denied for {path} signed with key {self.secret}")
        if "/broken" in path:
            url = f"https://account.blob.core.windows.net/box/broken?sv=2024&{SAS_SIGNATURE}"
            raise SdkError(f"request to {url} failed; auth: key={self.secret}")

    def read_bytes(self, path: str) -> bytes:
        self._check(path)
        return super().read_bytes(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        self._check(path)
        return super().list_dir(path)


def _refuse_to_connect(uri: str, options: Mapping[str, str]) -> StorageBackend:
    raise SdkError(f"cannot sign in to {uri} with key {options['chatty.secret-key']}")


class ChattyPlugin:
    @hookimpl
    def paimon_storage_backends(self) -> list[BackendSpec]:
        spec = BackendSpec("chatty", ("chatty",), lambda uri, options: ChattyBackend(options))
        broken = BackendSpec("chatty-down", ("chattydown",), _refuse_to_connect)
        return [dataclasses.replace(s, option_prefixes=("chatty.",)) for s in (spec, broken)]


def _chatty_registry() -> StorageRegistry:
    return StorageRegistry(create_plugin_manager(plugins=[("chatty", ChattyPlugin())], entry_points=False))


@pytest.fixture
def chatty() -> StorageBackend:
    return _chatty_registry().get_backend("chatty://box/wh", {"chatty.secret-key": SECRET})


def test_credentials_never_show_in_the_message_or_the_chained_cause(chatty: StorageBackend) -> None:
    with pytest.raises(StorageError) as raised:
        chatty.read_bytes("chatty://box/wh/broken")
    error = raised.value
    assert str(error) == (
        "chatty: cannot read chatty://box/wh/broken: SdkError: request to "
        "https://account.blob.core.windows.net/box/broken?sv=2024&sig=*** failed; auth: key=***"
    )
    assert type(error) is StorageError and error.path == "chatty://box/wh/broken"
    cause = error.__cause__
    assert isinstance(cause, RedactedCause) and cause.__traceback__ is not None  # the SDK's frames stay
    name, _, text = str(cause).partition(": ")
    assert name.endswith("test_error_messages.SdkError") and text.startswith(
        "request to https://account.blob"
    )
    for text in (str(error), str(cause), repr(cause)):
        assert SECRET not in text and SAS_SIGNATURE not in text
    assert error.__context__ is None and cause.__cause__ is None and cause.__context__ is None


def test_a_backend_that_cannot_be_built(chatty: StorageBackend) -> None:
    with pytest.raises(StorageError) as raised:
        _chatty_registry().get_backend("chattydown://box/wh", {"chatty.secret-key": SECRET})
    assert str(raised.value) == (
        "chatty-down: cannot set up storage for chattydown://box/wh: SdkError: cannot sign in to "
        "chattydown://box/wh with key ***"
    )
    assert SECRET not in str(raised.value.__cause__)


def test_a_builtin_failure_keeps_its_type(chatty: StorageBackend) -> None:
    with pytest.raises(StoragePermissionError) as raised:
        chatty.read_bytes("chatty://box/wh/denied")
    assert isinstance(raised.value, PermissionError)
    assert str(raised.value) == (
        "chatty: cannot read chatty://box/wh/denied: access denied for chatty://box/wh/denied signed with key ***"
    )
    with pytest.raises(StorageFileNotFoundError) as missing:
        chatty.read_bytes("chatty://box/wh/absent")
    assert isinstance(missing.value, FileNotFoundError)  # what core catches to tell "absent" apart
    assert isinstance(missing.value.__cause__, FileNotFoundError)  # no credentials in it: chained as it is


def test_storage_errors_and_translated_backends_pickle(chatty: StorageBackend) -> None:
    # Compaction in worker processes sends both across: the table's storage there, its errors back.
    again = pickle.loads(pickle.dumps(chatty))
    with pytest.raises(StoragePermissionError) as raised:
        again.read_bytes("chatty://box/wh/denied")
    restored = pickle.loads(pickle.dumps(raised.value))
    assert type(restored) is StoragePermissionError and str(restored) == str(raised.value)
    assert restored.path == "chatty://box/wh/denied"


def test_the_redactor_masks_passwords_in_uris_and_connection_strings() -> None:
    redact = Redactor()  # no secret values known: the shapes of credentials only
    assert redact("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert redact("host=h password='p w' user=u") == "host=h password=*** user=u"
    assert redact("jdbc:postgresql://h/db?user=u&password=s3cret&ssl=true") == (
        "jdbc:postgresql://h/db?user=u&password=***&ssl=true"
    )
    # No password in these: a container before the account, a port, an IPv6 host.
    for text in ("abfs://box@account.dfs.core.windows.net/wh", "http://host:9000/x@y", "http://[::1]:9000/"):
        assert redact(text) == text


# --- the command line -----------------------------------------------------------------------------------


def _one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 1
    err = capsys.readouterr().err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("paimon-py: error: ")
    return err[len("paimon-py: error: ") : -1]


def test_the_cli_prints_one_line_per_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Catalog.open(str(tmp_path / "warehouse"), create=True).create_database("db")
    missing = _one_line_error(
        capsys, "compact", str(tmp_path / "warehous"), "--database", "db", "--table", "t"
    )
    assert missing == (
        f"warehouse '{tmp_path / 'warehous'}' does not exist; did you mean '{tmp_path / 'warehouse'}'? "
        "(Catalog.open(uri, create=True) creates a new one)"
    )
    option = _one_line_error(
        capsys,
        "compact",
        str(tmp_path / "warehouse"),
        "--database",
        "db",
        "--table",
        "t",
        "--option",
        "bukcet=2",
    )
    assert option == "unknown option 'bukcet' (did you mean 'bucket'?)"
    table = _one_line_error(capsys, "info", str(tmp_path / "warehouse" / "db.db" / "t"))
    assert table == f"table '{tmp_path / 'warehouse' / 'db.db' / 't'}' does not exist"


def test_the_cli_prints_a_storage_failure_as_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    previous = set_default_registry(_chatty_registry())
    try:
        message = _one_line_error(
            capsys, "info", "chatty://box/wh/broken", "--option", f"chatty.secret-key={SECRET}"
        )
    finally:
        set_default_registry(previous)
    assert message == (
        "chatty: cannot list chatty://box/wh/broken/schema: SdkError: request to "
        "https://account.blob.core.windows.net/box/broken?sv=2024&sig=*** failed; auth: key=***"
    )


def test_error_lines_join_a_multi_line_message() -> None:
    assert error_line(PaimonError("first\n  second\n\nthird\n")) == "first second third"
    assert error_line(PaimonError()) == "PaimonError"
