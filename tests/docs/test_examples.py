"""Every ```yaml block of README.md and docs/*.md is checked by the code `cdc-lakehouse validate` runs.

* A block with a top-level ``pipeline:`` is a whole pipeline file and is validated as it is.
* Any other block is a fragment (``sources:``, ``silver:``, ``engine:``...): it is put into a
  minimal pipeline file (``pipeline``, ``lakehouse`` and, when it declares none, a PostgreSQL
  source for every topic prefix its silver entries and consistency settings name) and validated.
* A block right after ``<!-- invalid-example -->`` must FAIL validation, and each line of the
  ``<!-- error: ... -->`` comments that may follow the marker must appear in the error.

``${VAR}`` references are given a value, so examples can show how secrets are passed.
Also: the docs name no issue numbers or planning documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from cdc_sources.spi import ConfigError
from pipelines.validation import load_validated

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```yaml[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_MARKER = "<!-- invalid-example -->"
_ERROR = re.compile(r"<!-- error: (.*?) -->")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


@dataclass(frozen=True)
class Example:
    file: Path
    line: int
    text: str
    invalid: bool
    errors: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.file.name}:{self.line}"


def examples(path: Path) -> list[Example]:
    text = path.read_text()
    found = []
    for match in _FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n")
        # the comments right above the fence (blank lines allowed)
        comments = []
        for line in reversed(before.splitlines()):
            if not line.strip():
                continue
            if line.strip().startswith("<!--"):
                comments.append(line.strip())
                continue
            break
        invalid = _MARKER in comments
        errors = tuple(e for c in comments for e in _ERROR.findall(c))
        found.append(Example(path, text[:match.start()].count("\n") + 2, match.group(1), invalid, errors))
    return found


ALL = [e for path in DOCS for e in examples(path)]


def test_every_yaml_block_is_found():
    for path in DOCS:
        assert len(examples(path)) == path.read_text().count("```yaml"), path.name
    assert sum(e.invalid for e in ALL) >= 2
    assert {e.file.name for e in ALL} >= {"README.md", "configuration.md", "operations.md", "troubleshooting.md"}


def pipeline_file(example: Example, tmp_path: Path) -> Path:
    data = yaml.safe_load(example.text)
    assert isinstance(data, dict), f"{example.id}: a YAML example must be a mapping"
    if "pipeline" not in data:
        prefixes = {str(t.get("source", "")).split(".")[0] for t in data.get("silver") or [] if isinstance(t, dict)}
        prefixes |= set((data.get("silver_options") or {}).get("consistency") or {})
        base: dict[str, object] = {"pipeline": "docs", "lakehouse": {"root": str(tmp_path / "lake")}}
        if "sources" not in data:
            base["sources"] = [{"name": p, "connector": "postgres",
                                "connection": {"host": "db", "database": "shop", "user": "cdc"}}
                               for p in sorted(prefixes - {""}) or ["shop_pg"]]
        data = {**base, **data}
        text = yaml.safe_dump(data, sort_keys=False)
    else:
        text = example.text
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("example", ALL, ids=[e.id for e in ALL])
def test_example(example, tmp_path):
    path = pipeline_file(example, tmp_path)
    env = {name: "example-value" for name in _VAR.findall(example.text)}
    if example.invalid:
        with pytest.raises(ConfigError) as info:
            load_validated(path, env=env)
        for expected in example.errors:
            assert expected in str(info.value), f"{example.id}: {expected!r} not in {info.value}"
    else:
        try:
            load_validated(path, env=env)
        except ConfigError as exc:
            pytest.fail(f"{example.id}: the example does not validate:\n{exc}\n---\n{path.read_text()}")


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_the_docs_name_no_issue_numbers_or_planning_documents(path):
    text = path.read_text()
    assert not re.search(r"\bissues?\s*#?\d", text, re.IGNORECASE), path.name
    assert not re.search(r"issue notes|steering repo|ARCHITECTURE\.md|planning doc", text), path.name
