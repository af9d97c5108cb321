"""How many new anonymous visitors one client address is given (``MAX_NEW_VISITORS_PER_ADDRESS``),
as a DRF throttle. Imported only when first needed: DRF's throttling module reads the
project's throttle rates once, when it is first imported."""

from __future__ import annotations

import ipaddress
from typing import Any

from rest_framework.throttling import SimpleRateThrottle

from .conf import warlock_settings


class NewVisitorThrottle(SimpleRateThrottle):
    """New anonymous identities one client address is given in an hour
    (``MAX_NEW_VISITORS_PER_ADDRESS``), counted in Django's cache, by the address DRF's
    throttles read (``NUM_PROXIES``)."""

    scope = "warlock_new_visitors"

    def get_rate(self) -> str | None:
        limit = warlock_settings.MAX_NEW_VISITORS_PER_ADDRESS
        return None if limit is None else f"{limit}/hour"

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def get_ident(self, request: Any) -> str:
        """DRF's address, an IPv6 one as its /64 (one subscriber's, which rotates the rest)."""
        ident = super().get_ident(request)
        try:
            address = ipaddress.ip_address(ident)
        except ValueError:
            return str(ident)
        if address.version == 6:
            return str(ipaddress.ip_network(f"{address}/64", strict=False))
        return str(address)
