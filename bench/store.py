"""Store benchmark: one load + one save of a realistic ~20 KB session blob on PostgreSQL.

Contenders, interleaved in one run:
  raw-psycopg-jsonb   SELECT + conditional UPDATE on a jsonb column (the baseline)
  raw-psycopg-text    the same on a text column (what the jsonb parse costs)
  DjangoStore         warlock_sessions' default store on the alias docs/stores.md recommends
                      (server_side_binding, prepare_threshold)
  DjangoStore-client-binding    the same with prepared statements but Django's default
                                client-side binding (the blob escaped into the SQL text)
  DjangoStore-django-defaults   the same with Django's default connection options
  naive-orm           Model.objects.get() + filter(version=...).update() on the same model
  langgraph           LangGraph's PostgresSaver: get_tuple() + put()

Targets (issue 2): DjangoStore <= 1.3x raw-psycopg-jsonb, and <= 0.8x langgraph.
Run with ``make bench`` (PostgreSQL from WARLOCK_TEST_DATABASE_URL).
"""

from __future__ import annotations

import argparse
import json

import psycopg

from bench.common import (
    bench_database_url,
    configure_django,
    empty_tables,
    in_a_tenant,
    measure,
    raw_jsonb_load_save,
    report,
    sealed,
    verdict,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args()

    url = bench_database_url()
    configure_django(url)

    from warlock_sessions.engine.session import encode_session
    from warlock_sessions.models import Session as SessionRow
    from warlock_sessions.stores import DjangoStore
    from warlock_sessions.testing import realistic_session

    blob = realistic_session("bench")
    size = len(encode_session(blob, 1))
    print(
        f"blob: {size / 1024:.1f} KiB, {len(blob['runs'])} runs, "
        f"{sum(len(r['outcomes']) for r in blob['runs'])} outcome lines, "
        f"{len(blob['inputs'])} inputs, {len(blob['claims'])} claims; "
        f"{args.iterations} load+save pairs per contender"
    )

    raw = psycopg.connect(url, autocommit=True)
    raw_jsonb = raw_jsonb_load_save(raw, blob)
    raw.execute("DROP TABLE IF EXISTS bench_raw_text")
    raw.execute(
        "CREATE TABLE bench_raw_text (id text PRIMARY KEY, version integer NOT NULL,"
        " blob text NOT NULL)"
    )
    raw.execute("INSERT INTO bench_raw_text VALUES ('bench', 1, %s)", [json.dumps(blob)])

    def raw_text() -> None:
        text, version = raw.execute(
            "SELECT blob, version FROM bench_raw_text WHERE id = %s", ["bench"]
        ).fetchone()
        loaded = json.loads(text)
        updated = raw.execute(
            "UPDATE bench_raw_text SET blob = %s, version = %s WHERE id = %s AND version = %s",
            [json.dumps(loaded, separators=(",", ":")), version + 1, "bench", version],
        ).rowcount
        assert updated == 1

    empty_tables(SessionRow)
    store = DjangoStore()
    store.save(blob, 0)

    def django_store() -> None:
        loaded = store.load("bench")
        store.save(loaded, loaded["version"])

    def django_store_sealed_pair() -> None:
        loaded = store.load("sealed")
        store.save(loaded, loaded["version"])

    django_store_sealed = sealed(django_store_sealed_pair)
    sealed(lambda: store.save({**blob, "id": "sealed"}, 0))()

    def django_store_tenant_pair() -> None:
        loaded = store.load("tenant")
        store.save(loaded, loaded["version"])

    django_store_tenant = in_a_tenant(django_store_tenant_pair)
    in_a_tenant(lambda: store.save({**blob, "id": "tenant"}, 0))()

    client_store = DjangoStore(using="client_binding")
    client_store.save({**blob, "id": "client"}, 0)

    def django_store_client_binding() -> None:
        loaded = client_store.load("client")
        client_store.save(loaded, loaded["version"])

    defaults_store = DjangoStore(using="django_defaults")
    defaults_store.save({**blob, "id": "defaults"}, 0)

    def django_store_defaults() -> None:
        loaded = defaults_store.load("defaults")
        defaults_store.save(loaded, loaded["version"])

    store.save({**blob, "id": "naive"}, 0)

    def naive_orm() -> None:
        row = SessionRow.objects.get(id="naive")
        loaded = json.loads(row.blob)
        updated = SessionRow.objects.filter(id="naive", version=row.version).update(
            blob=json.dumps(loaded), version=row.version + 1
        )
        assert updated == 1

    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres import PostgresSaver

    saver_context = PostgresSaver.from_conn_string(url)
    saver = saver_context.__enter__()
    saver.setup()
    with saver.conn.cursor() as cursor:
        cursor.execute("TRUNCATE checkpoints, checkpoint_blobs")  # see empty_tables
    thread = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    first = empty_checkpoint()
    first["channel_values"] = {"session": blob}
    first["channel_versions"] = {"session": 1}
    config = saver.put(thread, first, {}, {"session": 1})

    def langgraph() -> None:
        nonlocal config
        latest = saver.get_tuple(thread)
        checkpoint = empty_checkpoint()
        version = latest.checkpoint["channel_versions"]["session"] + 1
        checkpoint["channel_values"] = {"session": latest.checkpoint["channel_values"]["session"]}
        checkpoint["channel_versions"] = {"session": version}
        config = saver.put(latest.config, checkpoint, {}, {"session": version})

    samples = measure(
        {
            "raw-psycopg-jsonb": raw_jsonb,
            "raw-psycopg-text": raw_text,
            "DjangoStore": django_store,
            "DjangoStore-sealed": django_store_sealed,
            "DjangoStore-tenant": django_store_tenant,
            "DjangoStore-client-binding": django_store_client_binding,
            "DjangoStore-django-defaults": django_store_defaults,
            "naive-orm": naive_orm,
            "langgraph": langgraph,
        },
        iterations=args.iterations,
    )
    ratios = report(samples, baseline="raw-psycopg-jsonb")
    # Issue 17 (orjson codec): <= 0.85x raw psycopg with jsonb and <= 0.7x LangGraph.
    print(verdict("DjangoStore / raw-psycopg-jsonb", ratios["DjangoStore"], 0.85))
    print(verdict("DjangoStore / langgraph", ratios["DjangoStore"] / ratios["langgraph"], 0.7))
    # Issue 30 (encryption at rest): sealing costs <= 10 %.
    print(
        verdict(
            "DjangoStore sealed / plain", ratios["DjangoStore-sealed"] / ratios["DjangoStore"], 1.1
        )
    )
    # Issue 45 §2 (tenants; issue 30 §4 asked <= 10 %): a tenant's scope costs <= 5 %.
    print(
        verdict(
            "DjangoStore in a tenant / no tenant",
            ratios["DjangoStore-tenant"] / ratios["DjangoStore"],
            1.05,
        )
    )
    saver_context.__exit__(None, None, None)
    raw.close()


if __name__ == "__main__":
    main()
