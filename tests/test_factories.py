"""Every model has a factory in ``warlock_sessions.testing.factories`` that makes a row the
database accepts."""

from __future__ import annotations

import pytest
from django.apps import apps

from warlock_sessions.testing import factories

FACTORIES = {
    name: getattr(factories, name)
    for name in dir(factories)
    if name.endswith("Factory") and hasattr(getattr(factories, name), "_meta")
}


def test_every_model_has_a_factory() -> None:
    models = {  # a proxy (the inbox's WaitingSession) has the rows of the model it shows
        model.__name__
        for model in apps.get_app_config("warlock_sessions").get_models()
        if not model._meta.proxy
    }
    made = {factory._meta.model.__name__ for factory in FACTORIES.values() if factory._meta.model}
    assert models <= made, models - made


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_factory_makes_rows_the_database_accepts(name: str) -> None:
    factory = FACTORIES[name]
    if factory._meta.model is None:
        pytest.skip("an abstract factory")
    first, second = factory.create(), factory.create()
    assert first.pk != second.pk
    assert factory._meta.model.objects.count() >= 2
