"""``manage.py warlock_cache_eval [PAIRS.jsonl]``: how a similarity threshold would serve
labelled pairs (docs/cache.md#tuning)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cache.evaluation import (
    SHIPPED_PAIRS,
    best_threshold,
    curve,
    read_pairs,
    score_pairs,
    wilson,
)
from ...providers.embedders import Embedder, OfflineEmbedder
from ...tenancy import for_every_tenant


class Command(BaseCommand):
    help = (
        "Score labelled pairs of questions as the semantic cache would, print the precision "
        "and recall at each threshold, and the highest-recall threshold at a precision."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "pairs",
            nargs="?",
            default=str(SHIPPED_PAIRS),
            help='JSON lines of {"question", "candidate", "same", "context"?} (default: '
            "the set that ships with warlock_sessions)",
        )
        parser.add_argument(
            "--precision", type=float, default=0.99, help="the precision to hold (0.99)"
        )
        parser.add_argument("--base-url", help="an OpenAI-compatible server's /v1 URL")
        parser.add_argument("--model", help="its embedding model (with --base-url)")
        parser.add_argument("--api-key", help="its key (with --base-url)")
        parser.add_argument(
            "--dimensions", type=int, default=256, help="the offline embedder's (256)"
        )
        parser.add_argument(
            "--paraphrases",
            action="store_true",
            help="score as SemanticCache(paraphrases=True) does (other words may differ)",
        )

    @for_every_tenant  # the operator's: over every tenant
    def handle(self, *args: Any, **options: Any) -> None:
        if not 0 < options["precision"] <= 1:
            raise CommandError("--precision is above 0 and at most 1")
        embedder = self._embedder(options)
        try:
            pairs = read_pairs(options["pairs"])
            scored = score_pairs(pairs, embedder, paraphrases=options["paraphrases"])
        except (OSError, ValueError) as error:
            raise CommandError(f"{options['pairs']}: {error}") from None
        if not scored:
            raise CommandError(f"{options['pairs']} holds no pairs")
        positives = sum(pair.same for pair in scored)
        refused = sum(pair.refused is not None for pair in scored)
        self.stdout.write(
            f"{len(scored)} pairs ({positives} same, {len(scored) - positives} different; "
            f"{refused} refused by the cache's checks whatever the score), embedder "
            f"{embedder.name}"
        )
        points = curve(scored, [step / 100 for step in range(30, 100)])
        self.stdout.write("threshold  precision  recall  false hits")
        for point in points[::5]:
            self.stdout.write(
                f"{point.threshold:9.2f}  {point.precision:9.3f}  {point.recall:6.3f}  "
                f"{point.false_hits}/{point.negatives}"
            )
        best = best_threshold(points, options["precision"])
        if best is None:
            self.stdout.write(
                f"No threshold holds precision {options['precision']:.2f} with any recall: "
                "use exact repeats only (no threshold), or a better embedder."
            )
            return
        low, high = wilson(best.false_hits, best.negatives)
        self.stdout.write(
            f"threshold {best.threshold:.2f}: precision {best.precision:.3f}, recall "
            f"{best.recall:.3f}, false hits {best.false_hits}/{best.negatives} "
            f"(rate {best.false_hit_rate:.3f}, 95 % interval {low:.3f}-{high:.3f})"
        )

    @staticmethod
    def _embedder(options: dict[str, Any]) -> Embedder:
        if options["base_url"] is None:
            return OfflineEmbedder(options["dimensions"])
        if not options["model"]:
            raise CommandError("--base-url needs --model")
        from ...providers.openai import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder(
            options["base_url"], options["model"], api_key=options["api_key"]
        )
