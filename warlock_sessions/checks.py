"""System checks for ``WARLOCK_SESSIONS``, one stable id per condition (docs/settings.md).

Every setting's own rule is its validator in ``conf.VALIDATORS``, the one that also runs when the
setting is read (a component's options are bound to its class's signature there); the checks
here add what spans settings or the environment (the database router, the channel layer, agents
and models). Checks never build a store: building one may open connections or create files.
"""

from __future__ import annotations

import inspect
from typing import Any
from urllib.parse import urlsplit

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.db import DatabaseError, connections, router
from django.urls import URLResolver, get_resolver

# The packages that say what their settings must name (conf.expect): imported here, so every
# setting's whole rule is checked at start-up, whatever has been imported by then.
from . import cache, checkpoints, locks, permissions, snapshots, stores  # noqa: F401
from .conf import (
    DEFAULTS,
    SETTING_NAME,
    VALIDATORS,
    Component,
    SettingError,
    configured_settings,
    warlock_settings,
)
from .engine.flows import closest_hint
from .workflows import orchestrator  # noqa: F401


def _setting(name: str) -> str:
    return f"{SETTING_NAME}['{name}']"


@register(Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    try:
        configured = configured_settings()
    except SettingError as error:
        return [_as_check(error)]
    messages: list[CheckMessage] = [
        Warning(
            f"{_setting(name)} is not a warlock_sessions setting and is ignored.",
            hint=_sentence(closest_hint(name, DEFAULTS, "known settings")),
            id="warlock_sessions.W001",
        )
        for name in configured
        if name not in DEFAULTS
    ]
    valid: dict[str, Any] = {}
    for name, validate in VALIDATORS.items():
        try:
            valid[name] = validate(name, configured.get(name, DEFAULTS[name]))
        except SettingError as error:
            # A component's older <NAME>_OPTIONS is checked by it too: report it once.
            if _as_check(error) not in messages:
                messages.append(_as_check(error))
    if "STORE" in valid:
        messages.extend(_check_store_database(valid["STORE"]))
    messages.extend(_check_realtime())
    if "PERMISSION" in valid:
        messages.extend(_check_policy(valid["PERMISSION"]))
    if {"MODELS", "AGENTS", "DEFAULT_AGENT"} <= set(valid):
        messages.extend(_check_models(configured))
        messages.extend(_check_agents(configured))
    if valid.get("TENANT_RESOLVER") is not None:
        messages.extend(_check_tenants(valid))
    return messages


#: The stores that keep each row's tenant and read only the current one's: a tenant's
#: conversations may live only in these while tenants are on.
TENANT_STORES = {
    "STORE": "warlock_sessions.stores.DjangoStore",
    "SNAPSHOT_STORE": "warlock_sessions.snapshots.DjangoSnapshotStore",
    "CHECKPOINT_STORE": "warlock_sessions.checkpoints.DjangoCheckpointStore",
}
TENANT_MIDDLEWARE = "warlock_sessions.tenancy.TenantMiddleware"
AUTHENTICATION_MIDDLEWARE = "django.contrib.auth.middleware.AuthenticationMiddleware"


def _check_tenants(valid: dict[str, Any]) -> list[CheckMessage]:
    """Tenants fail closed only where every row is read through a tenant's scope: stores that
    keep the tenant, and every view (the admin's) inside ``TenantMiddleware``."""
    from django.utils.module_loading import import_string

    problems = [
        f"{_setting(name)} = {valid[name].cls.__name__} keeps no tenant; use {path} "
        "(or leave it unset)"
        for name, path in TENANT_STORES.items()
        if isinstance(valid.get(name), Component)
        and not issubclass(valid[name].cls, import_string(path))
    ]
    kinds = {"checkpoint_store": "CHECKPOINT_STORE", "snapshot_store": "SNAPSHOT_STORE"}
    for configured in valid.get("ORCHESTRATORS") or []:
        for attribute, kind in kinds.items():
            store = getattr(configured, attribute, None)
            if store is not None and not isinstance(store, import_string(TENANT_STORES[kind])):
                problems.append(
                    f"the orchestrator {configured.name!r} keeps its "
                    f"{attribute.replace('_', ' ')} in a {type(store).__name__}, which keeps no "
                    "tenant"
                )
    middleware = list(getattr(settings, "MIDDLEWARE", None) or [])
    if TENANT_MIDDLEWARE not in middleware:
        problems.append(
            f"{TENANT_MIDDLEWARE} is not in MIDDLEWARE, so the admin and your views have no "
            "tenant: they read nothing and cannot write"
        )
    elif AUTHENTICATION_MIDDLEWARE in middleware and middleware.index(
        TENANT_MIDDLEWARE
    ) < middleware.index(AUTHENTICATION_MIDDLEWARE):
        problems.append(
            f"{TENANT_MIDDLEWARE} comes before AuthenticationMiddleware, so the resolver "
            "sees no user"
        )
    return [
        Error(
            f"{_setting('TENANT_RESOLVER')} is set, but {problem}.",
            hint="docs/privacy.md#tenants lists what tenants need.",
            id="warlock_sessions.E032",
        )
        for problem in problems
    ]


def _as_check(error: SettingError) -> CheckMessage:
    return Error(f"{str(error).rstrip('.')}.", hint=error.hint or None, id=error.check_id)


def _check_policy(policy: type) -> list[CheckMessage]:
    """A policy that narrows who may see a session but lists what it inherited would show, in
    the list, sessions that answer 404."""
    from .permissions import SessionPolicy

    def owner(method: str) -> type:
        return next(klass for klass in policy.__mro__ if method in vars(klass))

    mro = policy.__mro__
    # visible defined no deeper in the class tree than can_see: they were written together.
    if owner("visible") is SessionPolicy or mro.index(owner("visible")) <= mro.index(
        owner("can_see")
    ):
        return []
    return [
        Warning(
            f"{_setting('PERMISSION')} = {policy.__name__} defines can_see in "
            f"{owner('can_see').__name__} but inherits visible from {owner('visible').__name__}.",
            hint="can_see and visible answer the same question (for one session, for the list): "
            "override both, or the list may show sessions that answer 404.",
            id="warlock_sessions.W005",
        )
    ]


def _check_store_database(store: Component) -> list[CheckMessage]:
    """A ``DjangoStore`` on one database while the router sends the app's models to another:
    the host writes a turn's records beside the session, and the API, admin and websockets
    read them where the router says."""
    from .models import OutboundMessage, SessionEvent, SessionOwner, Wake
    from .models import Session as SessionRow
    from .stores.db import DjangoStore

    using = store.options.get("using")
    if not issubclass(store.cls, DjangoStore) or using is None:
        return []
    routed = sorted(
        {
            alias
            for model in (SessionRow, SessionEvent, OutboundMessage, Wake, SessionOwner)
            for alias in (router.db_for_read(model), router.db_for_write(model))
        }
        - {using}
    )
    if not routed:
        return []
    return [
        Warning(
            f"{_setting('STORE')} puts sessions in database {using!r}, but the database "
            f"router sends warlock_sessions models to {', '.join(map(repr, routed))}: the API, "
            "the admin and the websockets would read sessions and events where the store does "
            "not write them.",
            hint=f"Route the warlock_sessions app to {using!r} in DATABASE_ROUTERS "
            "(see the stores documentation), or drop 'using'.",
            id="warlock_sessions.W003",
        )
    ]


#: Channel layers whose messages never leave the process that sent them.
PROCESS_LOCAL_LAYERS = frozenset({"channels.layers.InMemoryChannelLayer"})


def _check_realtime() -> list[CheckMessage]:
    if not getattr(settings, "ASGI_APPLICATION", None):
        return []
    layers = getattr(settings, "CHANNEL_LAYERS", None)
    if not layers:
        return [
            Error(
                "ASGI_APPLICATION is set but CHANNEL_LAYERS is not: the session websockets of "
                "warlock_sessions.realtime follow sessions through channel-layer groups.",
                hint='Add CHANNEL_LAYERS, e.g. {"default": {"BACKEND": '
                '"channels.layers.InMemoryChannelLayer"}} for one process.',
                id="warlock_sessions.E011",
            )
        ]
    return []


@register(Tags.urls)
def check_api_installed(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The API's URLs are served but DRF is not an installed app: its browsable pages (what a
    browser gets) fail for want of DRF's templates, a 500 instead of the page."""
    if apps.is_installed("rest_framework") or not _serves(get_resolver(), API_URLS):
        return []
    return [
        Error(
            f"The URLconf includes {API_URLS}, but 'rest_framework' is not in "
            "INSTALLED_APPS: the API's pages in a browser fail (DRF's templates are not found).",
            hint="Add 'rest_framework' to INSTALLED_APPS.",
            id="warlock_sessions.E034",
        )
    ]


#: The module of the API's URLs.
API_URLS = "warlock_sessions.api.urls"


def _serves(resolver: URLResolver, module: str) -> bool:
    """Whether ``module``'s URLs are included anywhere under ``resolver``."""
    for pattern in resolver.url_patterns:
        if not isinstance(pattern, URLResolver):
            continue
        name = pattern.urlconf_name
        included = name if isinstance(name, str) else getattr(name, "__name__", "")
        if included == module or _serves(pattern, module):
            return True
    return False


#: The middleware that serves the collected static files from the app server itself.
WHITENOISE = "whitenoise.middleware.WhiteNoiseMiddleware"


@register(Tags.staticfiles, deploy=True)
def check_static_files_served(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A deployment check: with ``DEBUG`` off Django serves no static files, so the admin's
    styles, its flow graph and its live hand-over script are 404s unless WhiteNoise serves
    them from the app server or ``STATIC_URL`` points at another server."""
    if settings.DEBUG or "django.contrib.staticfiles" not in settings.INSTALLED_APPS:
        return []
    if WHITENOISE in settings.MIDDLEWARE or urlsplit(settings.STATIC_URL or "").netloc:
        return []
    return [
        Warning(
            "DEBUG is off and nothing in this project serves STATIC_URL: the admin's styles, "
            "the flow graph and the live hand-over script of warlock_sessions answer 404 "
            "unless a web server or a CDN serves the collected files.",
            hint=f"Set STATIC_ROOT, run collectstatic and add '{WHITENOISE}' after "
            "SecurityMiddleware (docs/deployment.md); if a web server serves STATIC_ROOT, "
            "add this check to SILENCED_SYSTEM_CHECKS.",
            id="warlock_sessions.W010",
        )
    ]


@register(Tags.compatibility, deploy=True)
def check_channel_layer(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A deployment check (``manage.py check --deploy``): a process-local channel layer is
    right for one process (``make demo``), and worth a word before several serve."""
    layers = getattr(settings, "CHANNEL_LAYERS", None) or {}
    if not getattr(settings, "ASGI_APPLICATION", None) or not layers:
        return []
    backend = (layers.get("default") or {}).get("BACKEND", "")
    if backend in PROCESS_LOCAL_LAYERS:
        return [
            Warning(
                f"CHANNEL_LAYERS uses {backend}, which does not cross processes: what the "
                "warlock_worker or another server process logs (a reminder, a turn over the "
                "API elsewhere) reaches open sockets only when they next read the event log, "
                "within about a second, instead of at once.",
                hint="Nothing is lost (the log is the truth); for instant delivery across "
                "processes use channels_redis.",
                id="warlock_sessions.W004",
            )
        ]
    return []


@register(Tags.security, deploy=True)
def check_plaintext_accepted(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A deployment check: ``ENCRYPTION_ACCEPT_PLAINTEXT`` is for the time it takes
    ``warlock_rotate_keys`` to seal a database kept before encryption, not for good."""
    try:
        accepting = warlock_settings.ENCRYPTION_ACCEPT_PLAINTEXT
    except SettingError:
        return []  # check_settings reports it
    if not accepting:
        return []
    return [
        Warning(
            "ENCRYPTION_ACCEPT_PLAINTEXT is on: a plain row where a sealed one belongs (one "
            "written behind the app's back) is read instead of refused.",
            hint="Run manage.py warlock_rotate_keys once, then remove the setting "
            "(docs/privacy.md#encryption-at-rest).",
            id="warlock_sessions.W007",
        )
    ]


@register(Tags.security)
def check_socket_origin(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The websocket stack of ``ASGI_APPLICATION`` checks a socket's ``Origin`` against its own
    host (``SameOriginValidator``): browsers send a site's cookies with a socket any page of
    the same site opens, and Channels' ``AllowedHostsOriginValidator`` admits every host in
    ``ALLOWED_HOSTS``, a sibling tenant's subdomain among them."""
    websocket = _websocket_application()
    if websocket is None or _wraps_same_origin_validator(websocket):
        return []
    return [
        Warning(
            f"The websocket stack of {settings.ASGI_APPLICATION} does not check that a socket's "
            "Origin is its own host: a page on another host of ALLOWED_HOSTS (another tenant's "
            "subdomain) can open its sockets with the visitor's cookies.",
            hint="Wrap it in warlock_sessions.realtime.middleware.SameOriginValidator instead of "
            "AllowedHostsOriginValidator (docs/privacy.md#tenants).",
            id="warlock_sessions.W008",
        )
    ]


def _websocket_application() -> Any:
    from django.utils.module_loading import import_string

    path = getattr(settings, "ASGI_APPLICATION", None)
    if not path:
        return None
    try:
        application = import_string(path)
    except Exception:
        return None  # Channels reports an ASGI_APPLICATION it cannot import
    mapping = getattr(application, "application_mapping", None)
    return mapping.get("websocket") if isinstance(mapping, dict) else None


#: Named, not imported: the realtime layer is the checks' sibling, not below them.
SAME_ORIGIN_VALIDATOR = "warlock_sessions.realtime.middleware.SameOriginValidator"


def _wraps_same_origin_validator(application: Any) -> bool:
    for _ in range(32):  # a middleware stack is shallow; a cycle must not hang the check
        if any(
            f"{kind.__module__}.{kind.__qualname__}" == SAME_ORIGIN_VALIDATOR
            for kind in type(application).__mro__
        ):
            return True
        inner = next(
            (
                getattr(application, name)
                for name in ("inner", "application", "app")
                if getattr(application, name, None) is not None
            ),
            None,
        )
        if inner is None:
            return False
        application = inner
    return False


@register(Tags.security, deploy=True)
def check_visitor_addresses(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A deployment check: new visitors are counted per client address
    (``MAX_NEW_VISITORS_PER_ADDRESS``) as DRF's throttles read it, which without
    ``NUM_PROXIES`` is whatever ``X-Forwarded-For`` a client sends, or a proxy's address."""
    from rest_framework.settings import api_settings

    try:
        limited = warlock_settings.MAX_NEW_VISITORS_PER_ADDRESS is not None
    except SettingError:
        return []  # check_settings reports it
    if not limited or api_settings.NUM_PROXIES is not None:
        return []
    return [
        Warning(
            "MAX_NEW_VISITORS_PER_ADDRESS counts new visitors per client address, but "
            "REST_FRAMEWORK['NUM_PROXIES'] is not set: a client names its own address in "
            "X-Forwarded-For and escapes the limit, and behind a proxy that sends none every "
            "visitor shares the proxy's address (and its limit).",
            hint="Set REST_FRAMEWORK['NUM_PROXIES'] to the number of proxies in front of the "
            "servers (0 for none) (docs/deployment.md).",
            id="warlock_sessions.W009",
        )
    ]


#: PgBouncer's port: a database on it is taken to be behind a pooler.
PGBOUNCER_PORT = 6432
#: psycopg's default ``prepare_threshold``.
PSYCOPG_PREPARE_THRESHOLD = 5


def _validated(name: str) -> Any:
    """Setting ``name`` as its validator makes it, or ``None`` where it is refused
    (``check_settings`` reports that)."""
    try:
        return VALIDATORS[name](name, configured_settings().get(name, DEFAULTS[name]))
    except SettingError:
        return None


@register(Tags.database, deploy=True)
def check_transaction_pooler(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """A deployment check: a PostgreSQL database behind a transaction pooler (PgBouncer's
    port, or ``DISABLE_SERVER_SIDE_CURSORS``, which Django asks for there) gives each
    transaction whichever server connection is free, so what lives on one server connection
    across transactions breaks: prepared statements and server-side binding, server-side
    cursors, and a session-level advisory lock (``PostgresAdvisoryLock``)."""
    lock = _validated("CONVERSATION_LOCK")
    advisory = lock is not None and lock.cls.__name__ == "PostgresAdvisoryLock"
    messages: list[CheckMessage] = []
    for alias, database in settings.DATABASES.items():
        if "postgresql" not in str(database.get("ENGINE", "")):
            continue
        pooled = str(database.get("PORT") or "") == str(PGBOUNCER_PORT)
        if not (pooled or database.get("DISABLE_SERVER_SIDE_CURSORS")):
            continue
        problems = _pooler_problems(database, advisory)
        if problems:
            messages.append(
                Warning(
                    f"DATABASES[{alias!r}] looks like PostgreSQL behind a transaction pooler "
                    f"(PgBouncer), where {'; '.join(problems)}.",
                    hint="Behind PgBouncer in transaction mode: DISABLE_SERVER_SIDE_CURSORS: "
                    "True, OPTIONS prepare_threshold: None (or PgBouncer 1.21+ with "
                    "max_prepared_statements) and no server_side_binding, and a "
                    "DatabaseLock or RedisLock, or a PostgresAdvisoryLock whose conninfo "
                    "reaches PostgreSQL directly (docs/deployment.md).",
                    id="warlock_sessions.W006",
                )
            )
    return messages


def _pooler_problems(database: dict[str, Any], advisory_lock: bool) -> list[str]:
    options = database.get("OPTIONS") or {}
    # psycopg prepares a statement run this many times unless told None.
    threshold = options.get("prepare_threshold", PSYCOPG_PREPARE_THRESHOLD)
    problems = []
    if options.get("server_side_binding"):
        problems.append("server-side binding prepares statements on one server connection")
    elif threshold is not None:
        problems.append(
            f"psycopg prepares statements (prepare_threshold is {threshold}) that another "
            "client's transaction may not find"
        )
    if options.get("assume_role"):
        problems.append("assume_role's SET ROLE stays on a server connection others get")
    if not database.get("DISABLE_SERVER_SIDE_CURSORS"):
        problems.append("server-side cursors (.iterator()) outlive their transaction")
    if advisory_lock:
        problems.append(
            "CONVERSATION_LOCK's PostgresAdvisoryLock holds a session-level lock that a "
            "pooled connection loses"
        )
    return problems


def _check_models(configured: dict[str, Any]) -> list[CheckMessage]:
    from .agents import model_options
    from .providers.endpoints import check_base_url

    messages: list[CheckMessage] = []
    for name, entry in (configured.get("MODELS") or {}).items():
        where = f"{SETTING_NAME}['MODELS']['{name}']"
        try:
            model_class, options = model_options(name)
            inspect.signature(model_class).bind(**options)
        except (ImportError, TypeError) as error:
            messages.append(Error(f"{where} cannot be built: {error}.", id="warlock_sessions.E007"))
            continue
        if "base_url" not in options:
            continue
        try:
            check_base_url(options["base_url"])
        except ValueError as error:
            messages.append(Error(f"{where}['BASE_URL']: {error}.", id="warlock_sessions.E008"))
            continue
        host = urlsplit(options["base_url"]).hostname or ""
        if "api_key" not in options and host not in ("localhost", "127.0.0.1", "::1"):
            looked = [f"{where}['API_KEY']"]
            if entry.get("API_KEY_ENV"):
                looked.append(f"the environment variable {entry['API_KEY_ENV']}")
            messages.append(
                Warning(
                    f"{where} calls {host} without an API key.",
                    hint="Looked in "
                    + " and ".join(looked)
                    + ". Set one of them (servers that need "
                    "no key, like a local Ollama, can ignore this).",
                    id="warlock_sessions.W002",
                )
            )
    return messages


def _check_agents(configured: dict[str, Any]) -> list[CheckMessage]:
    from .agents import get_agent, unready

    agents = configured.get("AGENTS") or {}
    messages: list[CheckMessage] = []
    for name, entry in agents.items():
        where = f"{SETTING_NAME}['AGENTS']['{name}']"
        model = entry.get("MODEL") if isinstance(entry, dict) else None
        if model is not None and model not in (configured.get("MODELS") or {}):
            messages.append(
                Error(
                    f"{where} names the model {model!r}, which is not in {SETTING_NAME}['MODELS'].",
                    id="warlock_sessions.E009",
                )
            )
            continue
        try:
            agent = get_agent(name)
        except Exception as error:  # an import error, a bad flow, a factory that failed
            messages.append(
                Error(
                    f"{where} cannot be loaded: {type(error).__name__}: {error}",
                    id="warlock_sessions.E006",
                )
            )
            continue
        problem = unready(agent)
        if problem:
            messages.append(
                Error(f"{where} cannot take turns: {problem}.", id="warlock_sessions.E033")
            )
    default = configured.get("DEFAULT_AGENT")
    if default is not None and default not in agents:
        messages.append(
            Error(
                f"{SETTING_NAME}['DEFAULT_AGENT'] = {default!r} is not in "
                f"{SETTING_NAME}['AGENTS'].",
                id="warlock_sessions.E013",
            )
        )
    return messages


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


#: Whether the database is Citus: the function its extension installs.
CITUS = "SELECT to_regproc('citus_version') IS NOT NULL"


@register(Tags.database)
def check_claims_on_citus(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """On Citus (``migrate``, ``check --database``), the worker must claim a bucket at a
    time: a claim over every bucket takes row locks on several shards, which Citus refuses,
    so no wake would fire and no message would go."""
    if not databases:
        return []
    try:
        if configured_settings().get("CLAIM_BY_BUCKET") is True:
            return []
    except SettingError:  # check_settings reports it
        return []
    messages: list[CheckMessage] = []
    for alias in databases:
        connection = connections[alias]
        if connection.vendor != "postgresql":
            continue
        try:
            with connection.cursor() as cursor:
                cursor.execute(CITUS)
                citus = bool(cursor.fetchone()[0])
        except DatabaseError:  # an unreachable database is another check's to report
            continue
        if citus:
            messages.append(
                Error(
                    f"DATABASES[{alias!r}] is Citus, and CLAIM_BY_BUCKET is off: the "
                    "worker's claims of due wakes and messages lock rows on several shards, "
                    "which Citus refuses.",
                    hint='Set WARLOCK_SESSIONS["CLAIM_BY_BUCKET"] = True (docs/scaling.md).',
                    id="warlock_sessions.E035",
                )
            )
    return messages


@register(Tags.database)
def check_cache_index(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """A ``PgVectorCacheStore`` ranks by a column and an index that ``warlock_cache_index``
    makes, of the store's length (``migrate``, ``check --database``). A warning: ``migrate``
    must still run, and the command needs its tables."""
    if not databases:
        return []
    component = _validated("CACHE_STORE")
    if component is None:
        return []
    try:  # the module needs the [cache] extra's numpy, which a project without a cache lacks
        from .cache.pgvector import PgVectorCacheStore, indexed_dimensions
    except ImportError:
        return []
    if not issubclass(component.cls, PgVectorCacheStore):
        return []
    try:
        store = component.build()
    except ValueError:  # options it refuses: building it at start-up says so
        return []
    if store.using not in databases or connections[store.using].vendor != "postgresql":
        return []
    try:
        found = indexed_dimensions(store.using)
    except DatabaseError:  # an unreachable database is another check's to report
        return []
    if found == store.dimensions:
        return []
    has = "no pgvector index" if found is None else f"an index of {found} dimensions"
    return [
        Warning(
            f"{_setting('CACHE_STORE')} is a PgVectorCacheStore of {store.dimensions} "
            f"dimensions, and database {store.using!r} has {has}: its puts and lookups would fail.",
            hint=f"Run manage.py warlock_cache_index --dimensions {store.dimensions} "
            f"--database {store.using} (docs/cache.md#pgvector).",
            id="warlock_sessions.W011",
        )
    ]
