"""The search column without accents ("Joao" finds "João"): every session's is written again
from its data, in batches."""

import json
from typing import Any

from django.db import migrations

BATCH = 1000


def fold_search_text(apps: Any, schema_editor: Any) -> None:
    from warlock_sessions.models import search_text

    Session = apps.get_model("warlock_sessions", "Session")
    rows = Session.objects.using(schema_editor.connection.alias)
    last = ""
    while True:
        batch = list(rows.filter(id__gt=last).order_by("id").only("id", "blob")[:BATCH])
        if not batch:
            return
        for row in batch:
            try:
                row.search_text = search_text(json.loads(row.blob).get("data"))
            except Exception:  # a blob that cannot be read keeps what it had
                continue
        rows.bulk_update(batch, ["search_text"])
        last = batch[-1].id


class Migration(migrations.Migration):
    dependencies = [("warlock_sessions", "0015_semantic_cache")]

    operations = [migrations.RunPython(fold_search_text, migrations.RunPython.noop)]
