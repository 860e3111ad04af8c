"""Debezium's comma-separated lists of Java regular expressions, matched in Python.

Every include/exclude list, column mask/truncate option, ``message.key.columns`` entry and
source-type propagation option is such a list. The rules, read from Debezium's
``Strings.RegExSplitter`` and ``Predicates.includes`` and checked against Debezium 3.6.3
(``tests/cdc_sources/common/DebeziumProbe.java``):

- Items are separated by commas. A backslash escapes the character after it, so ``\\,`` is a
  comma inside an item (the backslash is dropped); any other escape is kept for the regex.
  A comma inside ``{1,3}`` or ``[a,b]`` still separates items: write ``{1\\,3}``.
  A list ending in a lone backslash is invalid.
- Each item is trimmed; empty items (``a,,b``) are skipped; a blank list has no items.
- An item is a ``java.util.regex`` pattern that must match the WHOLE name
  (``Matcher.matches()``): ``public`` does not match ``public2``.
- Matching ignores case (``Pattern.CASE_INSENSITIVE`` without ``UNICODE_CASE``, so ASCII
  letters only) in every relational connector; ``case_sensitive=True`` turns that off.
- ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII-only, as Java's are by default.

Java-only syntax is translated: ``\\Q...\\E``, ``(?<name>...)``, ``\\k<name>``, ``\\z`` and
``\\Z``. Character-class union and intersection (``[a-c[x-z]]``, ``[a-z&&[^e]]``) are rejected
rather than silently read differently; anything else Python's ``re`` does not know is
reported as an invalid expression. Known remaining differences, none relevant to names:
Java's ``.`` also refuses ``\\r``, ``\\u0085``, ``\\u2028`` and ``\\u2029`` (Python's only ``\\n``),
and Python accepts a few patterns Java refuses (a ``{`` that starts no quantifier is a
literal in Python, an error in Java).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping

from cdc_sources.spi import CdcError, ConfigProblem, Fatal

__all__ = [
    "JAVA_TRIM",
    "InvalidRegexListError",
    "RegexList",
    "regex_list_option",
    "split_regex_list",
    "translate_java_regex",
]

_JAVA_END_BEFORE_TERMINATOR = "(?=(?:\\r\\n|[\\n\\r\\u0085\\u2028\\u2029])?\\Z)"
JAVA_TRIM = "".join(chr(c) for c in range(0x21))
"""The characters Java's ``String.trim()`` removes (every code point up to and including space)."""


class InvalidRegexListError(CdcError, Fatal, ValueError):
    """A comma-separated regex list cannot be used.

    Attributes:
        item: the offending item (the whole list for a splitting error).
        reason: what is wrong with it.
    """

    def __init__(self, item: str, reason: str) -> None:
        super().__init__(f"invalid regular expression {item!r}: {reason}", item=item, reason=reason)


def split_regex_list(text: str) -> list[str]:
    """Split a comma-separated regex list exactly as Debezium's ``RegExSplitter`` does.

    Raises:
        InvalidRegexListError: the list ends in a lone backslash.
    """
    parts: list[str] = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            if i + 1 >= n:
                raise InvalidRegexListError(
                    text, "the list ends with a lone backslash; write \\\\ for a literal backslash"
                )
            i += 2
            continue
        if ch == ",":
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip(JAVA_TRIM).replace("\\,", ",") for p in parts if p]


def translate_java_regex(pattern: str) -> str:
    """Rewrite the Java-only parts of ``pattern`` into Python ``re`` syntax.

    Raises:
        InvalidRegexListError: the pattern uses Java syntax with no Python equivalent.
    """
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            i = _translate_escape(pattern, i, in_class, out)
            continue
        if in_class:
            if ch == "[" or pattern.startswith("&&", i):
                raise InvalidRegexListError(
                    pattern,
                    "Java character-class union or intersection ([a[b]], &&) is not supported; "
                    "rewrite the class as a single [...] or an alternation",
                )
            in_class = ch != "]"
            out.append(ch)
            i += 1
        elif ch == "[":
            in_class = True
            head = "[^" if pattern.startswith("[^", i) else "["
            i += len(head)
            out.append(head)
            if pattern.startswith("]", i):  # a leading ] is a literal, as Python reads it
                out.append("\\]")
                i += 1
        elif pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
            out.append("(?P<")
            i += 3
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _translate_escape(pattern: str, i: int, in_class: bool, out: list[str]) -> int:
    nxt = pattern[i + 1]
    if nxt == "Q":
        end = pattern.find("\\E", i + 2)
        literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
        out.append(re.escape(literal))
        return len(pattern) if end < 0 else end + 2
    if nxt == "k" and pattern.startswith("<", i + 2) and not in_class:
        close = pattern.find(">", i + 3)
        if close > 0:
            out.append(f"(?P={pattern[i + 3 : close]})")
            return close + 1
    if nxt == "z" and not in_class:
        out.append("\\Z")
    elif nxt == "Z" and not in_class:
        out.append(_JAVA_END_BEFORE_TERMINATOR)
    else:
        out.append(pattern[i : i + 2])
    return i + 2


def _compile(item: str, flags: int) -> re.Pattern[str]:
    translated = translate_java_regex(item)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return re.compile(translated, flags)
    except re.error as exc:
        raise InvalidRegexListError(item, str(exc)) from None


class RegexList:
    """A compiled comma-separated regex list; `matches` is true if any item matches fully.

    Immutable and thread-safe.
    """

    __slots__ = ("_patterns", "items")

    def __init__(self, text: str, *, case_sensitive: bool = False) -> None:
        """Compile ``text``.

        Raises:
            InvalidRegexListError: an item is not a valid expression, or the list ends in
                a lone backslash.
        """
        flags = re.ASCII if case_sensitive else re.ASCII | re.IGNORECASE
        self.items: tuple[str, ...] = tuple(split_regex_list(text))
        self._patterns = tuple(_compile(item, flags) for item in self.items)

    def matches(self, name: str) -> bool:
        """Whether some item matches the whole of ``name``."""
        return any(pattern.fullmatch(name) is not None for pattern in self._patterns)

    def __repr__(self) -> str:
        return f"RegexList({','.join(self.items)!r})"


def regex_list_option(
    options: Mapping[str, str],
    name: str,
    *,
    case_sensitive: bool,
    problems: list[ConfigProblem],
) -> RegexList | None:
    """The option ``name`` compiled as a regex list, or None if absent or blank.

    An invalid list adds a `ConfigProblem` (path = the option name) to ``problems`` and
    gives None.
    """
    text = options.get(name)
    if text is None or not text.strip(JAVA_TRIM):
        return None
    try:
        return RegexList(text, case_sensitive=case_sensitive)
    except InvalidRegexListError as exc:
        problems.append(ConfigProblem(name, _problem_text(exc)))
        return None


def _problem_text(exc: InvalidRegexListError) -> str:
    return (
        f"{exc.message}. Items are comma-separated Java regular expressions matched against "
        "the whole name; write \\, for a comma inside an expression"
    )
