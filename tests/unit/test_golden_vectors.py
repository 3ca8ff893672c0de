"""Golden vectors for the wire contract: the canonical Avro bytes of fixed events, their
SHA-256 digest (what the device's next event carries as `prev_digest`), and the schema
fingerprints, computed with fastavro's own `fingerprint` function (CRC-64-AVRO and
SHA-256 of the Parsing Canonical Form). The literals were taken once and are checked
by hand in the comments; a change to any of them is a change of the contract and needs
a new released schema version (schemas/avro/released/), not a new literal.
"""

from __future__ import annotations

import hashlib
import json
import struct

import pytest
from fastavro.schema import fingerprint, to_parsing_canonical_form

from pitwatch.blackjack import Ratio
from pitwatch.events.avro import decode, digest, encode, encode_single
from pitwatch.events.model import (
    CardDealt,
    Event,
    PayEntry,
    PayTable,
    Rules,
    TableOpened,
    WagerPlaced,
)
from pitwatch.events.schema import (
    fingerprint as pitwatch_fingerprint,
)
from pitwatch.events.schema import (
    parsed_schema,
    schemas_dir,
    single_object_header,
)

T0 = 1_764_460_800_000  # 2025-11-30 00:00:00 UTC

EVENTS: dict[str, Event] = {
    "table_opened": Event(
        "00000000-0000-4000-8000-000000000001", "GV-01", "GV-01-console", 1, T0, None, None,
        TableOpened("NJ", "BLACKJACK", Rules(
            decks=8, dealer_hits_soft_17=True, blackjack_pays=Ratio(3, 2), surrender=True,
            bonus_wager=True, bonus_wager_max=5000, min_wager=1500, max_wager=1_000_000,
            pay_tables=(PayTable("BONUS", (PayEntry("THREE_EIGHTS_SUITED", 50, 1),)),)))),
    "wager_placed": Event(
        "00000000-0000-4000-8000-000000000029", "GV-01", "GV-01-rfid", 41, T0 + 123,
        "GV-01-000912", bytes(range(32)), WagerPlaced(3, 0, "INSURANCE", 1500)),
    "card_dealt": Event(
        "00000000-0000-4000-8000-000000000007", "GV-01", "GV-01-shoe", 7, T0 + 456,
        "GV-01-000912", bytes([0xAB]) * 32, CardDealt("DEALER", None, None, "10", "H", False)),
}

#: name -> (canonical Avro bytes, SHA-256 of them), hex
GOLDEN: dict[str, tuple[str, str]] = {
    "table_opened": (
        "4830303030303030302d303030302d343030302d383030302d3030303030303030303030310a47562d"
        "30311a47562d30312d636f6e736f6c650280a0f9a0da6600000000001001060404020000010800000100"
        "010102904e00000000b81780897ac80102020a424f4e5553022654485245455f4549474854535f535549"
        "54454464020000",
        "5b11fd3421aef213df8a292caaff7825b3fb80f21ce603a572b469dfbbac95a8"),
    # ... 02 (seq 41: zigzag 82 = 0x52) ... 06 (union branch 3, WagerPlaced) 06 (seat 3)
    # 00 (hand 0) 02 (INSURANCE, enum symbol 1) b817 (1,500 cents: zigzag 3,000)
    "wager_placed": (
        "4830303030303030302d303030302d343030302d383030302d3030303030303030303032390a47562d"
        "30311447562d30312d7266696452f6a1f9a0da66021847562d30312d3030303931320240000102030405"
        "060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f06060002b817",
        "e9c334d496edff2899e2a74072e256834ae00541b6a967d14dc9335f4380801a"),
    "card_dealt": (
        "4830303030303030302d303030302d343030302d383030302d3030303030303030303030370a47562d"
        "30311447562d30312d73686f650e90a7f9a0da66021847562d30312d3030303931320240ababababab"
        "ababababababababababababababababababababababababababab08020000120400",
        "c83a3f2ac912cd1a7499739ab8f140066bc14167e89bb36683a12c49806aba36"),
}

#: schema file -> (CRC-64-AVRO, SHA-256) of its Parsing Canonical Form, as fastavro
#: writes them (the CRC as its 8 little-endian bytes)
FINGERPRINTS: dict[str, tuple[str, str]] = {
    "TableEvent.avsc": ("e79bfcbeeea2ddde",
                        "8ab2927b80243f6ab77d55aa74d2857bdc465f5e683a89499a2bdd12503f3dbe"),
    "Violation.avsc": ("fe54c155c806e965",
                       "77baf269a926b553a05ff89a4e577c63732100316e9995c32172bb9ba62a5382"),
}


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_canonical_bytes_and_digest(name: str) -> None:
    ev = EVENTS[name]
    body, sha = GOLDEN[name]
    assert encode(ev).hex() == body
    assert digest(ev).hex() == sha
    assert hashlib.sha256(bytes.fromhex(body)).hexdigest() == sha
    assert decode(bytes.fromhex(body)) == ev


def test_the_envelope_bytes_read_by_hand() -> None:
    """The first field, event_id, is a string: its length 36 as a zigzag varint (0x48),
    then the ASCII of the UUID; round_id null is union branch 0 (0x00)."""
    body = bytes.fromhex(GOLDEN["table_opened"][0])
    assert body[0] == 0x48
    assert body[1:37] == b"00000000-0000-4000-8000-000000000001"
    wager = bytes.fromhex(GOLDEN["wager_placed"][0])
    assert wager.endswith(bytes.fromhex("06060002b817"))


#: What released/v1 had before the Checkpoint payload (v2)
V1_FINGERPRINTS: dict[str, tuple[str, str]] = {
    **FINGERPRINTS,
    "TableEvent.avsc": ("403b329a44f3b2ad",
                        "9d64ce956053510a86c21bb51407a1c6a3707cec5d207a61aa6e0a0a091fa3d4"),
}
#: What released/v2 had before the SealedCheckpoint payload (v3)
V2_FINGERPRINTS: dict[str, tuple[str, str]] = {
    **FINGERPRINTS,
    "TableEvent.avsc": ("6ebdb5aab495a1e5",
                        "864ddb1a1cba8e6eaa6976dd0c02e365d7bbbe06b080e0ceb6f0ed401b5df049"),
}
#: What released/v3 had before the HoleCardChecked payload (v4)
V3_FINGERPRINTS: dict[str, tuple[str, str]] = {
    **FINGERPRINTS,
    "TableEvent.avsc": ("7cc3a50e7f94332c",
                        "212849b9620e7f40741657f3825a234c7a920cb2d2e36131180e36277b48ff61"),
}
#: What released/v4 had before the PostedTableOpened payload (v5)
V4_FINGERPRINTS: dict[str, tuple[str, str]] = {
    **FINGERPRINTS,
    "TableEvent.avsc": ("06a58ef26e8362f8",
                        "5e78ccaa1b3e0f24ddb0eeb8e243955fe49d7bdaa2d929efbac7ffaa895eb04d"),
}
#: What released/v5 had before the seat events (PlayerSeated, PlayerLeft: v6, the
#: current version)
V5_FINGERPRINTS: dict[str, tuple[str, str]] = {
    **FINGERPRINTS,
    "TableEvent.avsc": ("eefe3437380ef758",
                        "16011a2545f94a1a675f51553b2b15e69847a166c86c768438ffd06fdfb5aeaf"),
}
_BY_RELEASE = {"released/v1/": V1_FINGERPRINTS, "released/v2/": V2_FINGERPRINTS,
               "released/v3/": V3_FINGERPRINTS, "released/v4/": V4_FINGERPRINTS,
               "released/v5/": V5_FINGERPRINTS}


@pytest.mark.parametrize("release", ["", "released/v1/", "released/v2/", "released/v3/",
                                     "released/v4/", "released/v5/", "released/v6/"])
@pytest.mark.parametrize("schema", sorted(FINGERPRINTS))
def test_schema_fingerprints_with_fastavro(schema: str, release: str) -> None:
    with open(schemas_dir() / "avro" / f"{release}{schema}", encoding="utf-8") as f:
        canonical = to_parsing_canonical_form(json.load(f))
    crc, sha = _BY_RELEASE.get(release, FINGERPRINTS)[schema]
    assert fingerprint(canonical, "CRC-64-AVRO") == crc
    assert fingerprint(canonical, "SHA-256") == sha


def test_the_wire_header_carries_fastavros_fingerprint() -> None:
    """Single-object encoding: C3 01, then the CRC-64-AVRO fingerprint, little-endian.
    pitwatch's own CRC (pitwatch.events.schema) agrees with fastavro's."""
    crc = FINGERPRINTS["TableEvent.avsc"][0]
    assert single_object_header().hex() == "c301" + crc
    assert struct.pack("<Q", pitwatch_fingerprint(parsed_schema())).hex() == crc
    message = encode_single(EVENTS["wager_placed"])
    assert message.hex() == "c301" + crc + GOLDEN["wager_placed"][0]
