"""What docs/deployment.md and docs/scaling.md tell an operator to run and write works as
written: each ``manage.py`` command line parses with that command's own options (and the
sharded workers run), the settings snippets build, and the deploy check answers the PgBouncer
recipe as the page says."""

from __future__ import annotations

import copy
import logging.config
import re
import shlex
import textwrap
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command, get_commands, load_command_class
from django.test import override_settings

from warlock_sessions.checks import (
    check_settings,
    check_static_files_served,
    check_transaction_pooler,
)

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: The checks read DATABASES as settings; no connection is made to these.
pytestmark = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
PAGES = ["deployment.md", "scaling.md"]
#: A command line as the pages write them: in a code block or inline, up to a comment.
COMMAND = re.compile(r"manage\.py ([a-z_]+(?: [^`#\n|]*)?)")


def command_lines() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        for line in COMMAND.findall((DOCS / page).read_text()):
            words = shlex.split(line.replace("…", "").strip())
            found.append((page, words))
    return found


def python_blocks(page: str) -> list[str]:
    """The page's Python blocks, those inside a list item too (indented with it)."""
    found = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.DOTALL)
    return [textwrap.dedent(block) for block in found]


def test_the_pages_name_the_commands_an_operator_runs() -> None:
    named = {words[0] for _, words in command_lines()}
    assert {"warlock_worker", "warlock_prune", "check"} <= named


@pytest.mark.parametrize(("page", "words"), command_lines(), ids=lambda value: str(value))
def test_each_command_line_parses_with_its_command_options(page: str, words: list[str]) -> None:
    name, *args = words
    command = load_command_class(get_commands()[name], name)
    parser = command.create_parser("manage.py", name)
    parser.parse_args(args)  # an unknown option or a bad value exits


@pytest.mark.django_db(transaction=True)
def test_the_sharded_workers_of_the_page_run() -> None:
    for _page, (name, *args) in command_lines():
        if name == "warlock_worker" and "--shard" in args:
            call_command(name, *args, "--once", verbosity=0)


STARTPROJECT_MIDDLEWARE = (
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)


def page_settings(page: str, *, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The page's settings snippets run in order, as a settings module would."""
    namespace: dict[str, Any] = {
        # What the page adds to (scaling.md writes into a project's own default).
        "DATABASES": {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "app"}},
        "WARLOCK_SESSIONS": {},
        # What `django-admin startproject` writes.
        "BASE_DIR": Path("/srv/mysite"),
        "MIDDLEWARE": list(STARTPROJECT_MIDDLEWARE),
        "urlpatterns": [],
        "path": lambda *args, **kwargs: None,
        "include": lambda *args, **kwargs: None,
    }
    for block in python_blocks(page):
        if block.lstrip().startswith('"websocket"') or any(word in block for word in skip):
            continue  # a fragment of asgi.py (the tutorial's test runs a whole one)
        exec(compile(block, f"{page} example", "exec"), namespace)
    return namespace


def test_the_pgbouncer_recipe_quiets_the_deploy_check() -> None:
    configured = page_settings("deployment.md")
    databases = configured["DATABASES"]
    assert databases["default"]["PORT"] == "6432"  # the recipe moved it behind the pooler
    with override_settings(DATABASES=databases, WARLOCK_SESSIONS=configured["WARLOCK_SESSIONS"]):
        assert check_transaction_pooler() == []
    # The settings above the recipe, behind PgBouncer, are warned of.
    before = copy.deepcopy(page_settings("deployment.md", skip=("PgBouncer's",))["DATABASES"])
    before["default"]["PORT"] = "6432"
    with override_settings(DATABASES=before):
        assert [message.id for message in check_transaction_pooler()] == ["warlock_sessions.W006"]


def test_the_static_files_recipe_quiets_the_deploy_check() -> None:
    configured = page_settings("deployment.md")
    assert configured["STATIC_ROOT"] == Path("/srv/mysite/staticfiles")
    whitenoise = configured["MIDDLEWARE"].index("whitenoise.middleware.WhiteNoiseMiddleware")
    assert configured["MIDDLEWARE"][whitenoise - 1].endswith("SecurityMiddleware")
    with override_settings(DEBUG=False, MIDDLEWARE=list(STARTPROJECT_MIDDLEWARE)):
        assert [message.id for message in check_static_files_served()] == ["warlock_sessions.W010"]
    with override_settings(DEBUG=False, MIDDLEWARE=configured["MIDDLEWARE"]):
        assert check_static_files_served() == []


@pytest.mark.parametrize("page", PAGES)
def test_the_read_replica_settings_pass_the_checks(page: str) -> None:
    configured = page_settings(page)
    assert configured["WARLOCK_SESSIONS"]["READ_REPLICA"] == "replica"
    with override_settings(
        DATABASES=configured["DATABASES"], WARLOCK_SESSIONS=configured["WARLOCK_SESSIONS"]
    ):
        assert [message.id for message in check_settings()] == []


def test_the_logging_of_outages_configures() -> None:
    configured = page_settings("deployment.md")
    before = logging.getLogger("psycopg.pool").handlers[:]
    try:
        logging.config.dictConfig(configured["LOGGING"])
        assert logging.getLogger("psycopg.pool").handlers
    finally:
        logging.getLogger("psycopg.pool").handlers[:] = before
        logging.getLogger("channels_redis").handlers.clear()
