"""Which of extraction's word rules run: the switch that ``yiji bench extraction --ablate`` turns.

Extraction applies, beyond the contract's checks, rules that read the words of a quote: refusals with a
stable rule id (``small_talk``, ``agreement_not_stated``, ...) and steps of grounding that rewrite a
proposed item (``kind_by_words``, ``speaker_words``, ...). Each has an id in :data:`SWITCHABLE`. A
:class:`RulePlan` names the ones switched off; it is passed explicitly to
:func:`yiji.domain.grounding.ground`, :func:`yiji.domain.validation.validate_batch`,
:func:`yiji.domain.cues.extraction_rules` and :func:`yiji.domain.grounding.mark_duplicates`, so a
measurement can run the whole pipeline with one rule off and nothing else changed.

Invariant: the contract's own rules (an exact quote from the source, basis by role, no keyed fact from an
inference or an assistant, role emotion only from the assistant, archived sources, credentials) are not
switchable; only word rules that a measurement may show to cost more than they give are. The default
plan (:data:`ALL_ON`) switches nothing off, and it is what every user of yiji runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from yiji.errors import InvalidInput

__all__ = ["ALL_ON", "GROUNDING_STEPS", "REFUSALS", "SWITCHABLE", "RulePlan"]

REFUSALS: Final = (
    "conditional_or_question_not_fact",
    "third_party_subject_for_user",
    "fact_value_not_in_quote",
    "kind_not_from_assistant",
    "small_talk",
    "emotion_not_expressed",
    "growth_not_stated",
    "agreement_not_stated",
    "duplicate",
)
"""Refusals by word rules: the same ids as :class:`yiji.domain.validation.Rule`."""
GROUNDING_STEPS: Final = (
    "user_feeling_observation",
    "assistant_kind",
    "steer_keys",
    "someone_else_unkeyed",
    "kind_by_words",
    "growth_quote",
    "speaker_words",
    "with_subject",
    "whole_sentence",
    "fragment_sentence",
    "agreement_time",
)
"""Steps of :func:`yiji.domain.grounding.ground` that rewrite an item by its words (its kind, key or text)."""
SWITCHABLE: Final = REFUSALS + GROUNDING_STEPS


@dataclass(frozen=True, slots=True)
class RulePlan:
    """The word rules switched off (``disabled``, ids of :data:`SWITCHABLE`); all others run."""

    disabled: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not self.disabled <= frozenset(SWITCHABLE):
            raise InvalidInput("rules", "not a switchable rule id")

    def on(self, rule: str) -> bool:
        """Whether ``rule`` runs under this plan."""
        return rule not in self.disabled

    @classmethod
    def without(cls, *rules: str) -> RulePlan:
        """The plan with ``rules`` switched off."""
        return cls(frozenset(rules))


ALL_ON: Final = RulePlan()
"""Every rule runs: what extraction does outside a measurement."""
