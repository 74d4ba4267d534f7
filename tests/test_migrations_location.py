"""Where the index finds its SQL migrations, in a checkout and in an installed package."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcsh_store.errors import IndexDatabaseError
from xcsh_store.index import db


def test_a_checkout_uses_the_top_level_migrations_folder():
    checkout = Path(db.__file__).resolve().parents[2] / "migrations"
    assert db.migrations_dir() == checkout
    assert db.load_migrations()[0].name == "0001_initial"


def test_an_installed_package_uses_its_shipped_copy(tmp_path, monkeypatch):
    # The layout pip produces: site-packages/xcsh_store/{index/db.py, migrations/*.sql}, and a
    # stray site-packages/migrations from some other distribution that must not be used.
    package = tmp_path / "site-packages" / "xcsh_store"
    (package / "index").mkdir(parents=True)
    (package / "migrations").mkdir()
    (package / "migrations" / "0001_initial.sql").write_text("CREATE TABLE shipped (x);")
    (tmp_path / "site-packages" / "migrations").mkdir()
    (tmp_path / "site-packages" / "migrations" / "0001_other.sql").write_text("-- not ours")
    monkeypatch.setattr(db, "__file__", str(package / "index" / "db.py"))
    assert db.migrations_dir() == package / "migrations"
    assert [migration.name for migration in db.load_migrations()] == ["0001_initial"]


def test_no_migrations_is_an_error_not_an_empty_schema(tmp_path):
    with pytest.raises(IndexDatabaseError, match="No schema migrations"):
        db.load_migrations(tmp_path)
