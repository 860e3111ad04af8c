"""Sizes as people write them."""

from __future__ import annotations

import pytest

from pipelines.sizes import format_size, parse_size


@pytest.mark.parametrize(("text", "expected"), [("5GB", 5 << 30), ("512 MiB", 512 << 20), ("1.5kB", 1536),
                                                ("100", 100), ("2tb", 2 << 40)])
def test_parse(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "GB", "5 XB", "-1GB", "1,5GB"])
def test_parse_rejects(text):
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


def test_format():
    assert format_size(None) == "-"
    assert format_size(512) == "512 B"
    assert format_size(1536) == "1.5 kB"
    assert format_size(10 << 30) == "10.0 GB"
