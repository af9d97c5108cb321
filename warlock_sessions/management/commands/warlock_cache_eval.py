"""``manage.py warlock_cache_eval [PAIRS.jsonl]``: how a similarity threshold would serve
labelled pairs (docs/cache.md#tuning)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cache.evaluation import (
    SHIPPED_PAIRS,
    Point,
    ScoredPair,
    best_threshold,
    by_kind,
    curve,
    judged,
    pair_scores,
    read_pairs,
)
from ...providers.embedders import Embedder, OfflineEmbedder
from ...tenancy import for_every_tenant


class Command(BaseCommand):
    help = (
        "Score labelled pairs of questions as the semantic cache would, print the precision "
        "and recall at each threshold, and the highest-recall threshold at a precision, with "
        "95 % intervals, in each mode."
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
            "--mode",
            choices=("rewordings", "paraphrases", "both"),
            default="both",
            help="score as SemanticCache() does (rewordings), as SemanticCache(paraphrases="
            "True) does, or both (the default)",
        )
        parser.add_argument(
            "--threshold",
            type=float,
            help="report this threshold (yours) instead of the best at --precision",
        )

    @for_every_tenant  # the operator's: over every tenant
    def handle(self, *args: Any, **options: Any) -> None:
        if not 0 < options["precision"] <= 1:
            raise CommandError("--precision is above 0 and at most 1")
        if options["threshold"] is not None and not 0 < options["threshold"] <= 1:
            raise CommandError("--threshold is above 0 and at most 1")
        embedder = self._embedder(options)
        try:
            pairs = list(read_pairs(options["pairs"]))
            scores = pair_scores(pairs, embedder)
        except (OSError, ValueError) as error:
            raise CommandError(f"{options['pairs']}: {error}") from None
        if not pairs:
            raise CommandError(f"{options['pairs']} holds no pairs")
        positives = sum(pair["same"] for pair in pairs)
        self.stdout.write(
            f"{len(pairs)} pairs ({positives} same, {len(pairs) - positives} different), "
            f"embedder {embedder.name}"
        )
        modes = ("rewordings", "paraphrases") if options["mode"] == "both" else (options["mode"],)
        for mode in modes:
            scored = judged(pairs, scores, paraphrases=mode == "paraphrases")
            self._report(mode, scored, options)

    def _report(self, mode: str, scored: list[ScoredPair], options: dict[str, Any]) -> None:
        refused = sum(pair.refused is not None for pair in scored)
        self.stdout.write(
            f"\nmode {mode}: {refused} pairs refused by the cache's checks whatever the score"
        )
        points = curve(scored, [step / 100 for step in range(30, 100)])
        self.stdout.write("threshold  precision  recall  false hits")
        for point in points[::5]:
            self.stdout.write(
                f"{point.threshold:9.2f}  {point.precision:9.3f}  {point.recall:6.3f}  "
                f"{point.false_hits}/{point.negatives}"
            )
        if options["threshold"] is not None:
            chosen: Point | None = curve(scored, [options["threshold"]])[0]
        else:
            chosen = best_threshold(points, options["precision"])
        if chosen is None:
            self.stdout.write(
                f"No threshold holds precision {options['precision']:.2f} with any recall: "
                "use exact repeats only (no threshold), or a better embedder."
            )
            return
        self.stdout.write(_summary(chosen))
        kinds = by_kind(scored, chosen.threshold)
        if set(kinds) != {"-"}:
            self.stdout.write(
                "served by kind: "
                + ", ".join(f"{kind} {hits}/{total}" for kind, (hits, total) in kinds.items())
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


def _summary(point: Point) -> str:
    def interval(bounds: tuple[float, float]) -> str:
        return f"{bounds[0]:.3f}-{bounds[1]:.3f}"

    return (
        f"threshold {point.threshold:.2f}: precision {point.precision:.3f} "
        f"({interval(point.precision_interval)}), recall {point.recall:.3f} "
        f"({interval(point.recall_interval)}), false hits {point.false_hits}/{point.negatives}"
        " (95 % intervals)"
    )
