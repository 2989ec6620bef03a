"""Secret redaction as configured: :func:`redactor_for` turns ``[redaction]`` into the
:class:`yiji.domain.secrets.Redactor` every event writer calls (event submit and import, host capture and
the hooks, corrections, ``remember``) before anything else sees the text.

Host capture builds one at every hook, so this module imports neither pydantic nor the rest of the service
(:mod:`yiji.service.secret_scan` is ``doctor``'s part).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from yiji.config import Config
from yiji.domain.secrets import Redacted, Redactor, default_redactor, load_rules, parse_rules
from yiji.errors import InvalidInput

__all__ = ["NO_REDACTION", "ConfiguredRedactor", "redactor_for"]

NO_REDACTION = Redactor(())
"""What ``[redaction] enabled = false`` gives: every text is stored as submitted."""


def redactor_for(config: Config) -> Redactor:
    """The redactor ``config`` asks for: yiji's rules, then those of ``[redaction] rules``, or none."""
    section = config.redaction
    if not section.enabled:
        return NO_REDACTION
    if section.rules is None:
        return default_redactor()
    return _with_rules_file(section.rules.expanduser())


@cache
def _with_rules_file(path: Path) -> Redactor:
    import re
    import tomllib

    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except OSError:
        raise InvalidInput("redaction.rules", "the rules file could not be read") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        raise InvalidInput("redaction.rules", "the rules file is not valid TOML") from None
    try:
        extra, _ = parse_rules(data, "redaction.rules")
        for rule in extra:
            _ = rule.pattern
    except ValueError as exc:
        raise InvalidInput("redaction.rules", str(exc).removeprefix("redaction.rules: ")) from None
    except re.error:
        raise InvalidInput("redaction.rules", "a rule's regex is not a valid regular expression") from None
    own, placeholder = load_rules()
    return Redactor((*own, *extra), placeholder)


class ConfiguredRedactor:
    """The redactor ``config`` asks for (:func:`redactor_for`), built when first used: a rules file that
    cannot be read fails the first write that needs it, not every command that opens the service."""

    def __init__(self, config: Config) -> None:
        self._config = config
        self._redactor: Redactor | None = None

    def get(self) -> Redactor:
        if self._redactor is None:
            self._redactor = redactor_for(self._config)
        return self._redactor

    def redact(self, text: str) -> Redacted:
        return self.get().redact(text)
