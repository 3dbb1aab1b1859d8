#!/usr/bin/env python3
"""An independent reference implementation of simhash-doc-v1 steps 1-7, written from
docs/spec/simhash-doc-v1.md alone (it shares no code with the Rust implementation).

It starts from the extracted text (extraction is specified separately) and recomputes the tokens, the token
hashes and the fingerprint of every golden vector:

    python3 tools/reference/simhash_doc_v1.py testdata/vectors/simhash-doc-v1

Needs the `regex` module (pip install regex) for the Script property. Python's own Unicode tables are older
than the spec's pinned version (Unicode 18.0.0); they agree on every character the vectors use.
"""
import base64
import json
import os
import sys
import unicodedata

import regex

WHITE_SPACE = set("\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                  "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
SINGLE = regex.compile(r"[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}"
                       r"\p{Script=Khmer}\p{Script=Myanmar}]")
DOI = regex.compile(r"^(doi:)?10\.[0-9]{4,9}/")
M32 = 0xFFFFFFFF


def rot(x, k):
    return ((x << k) | (x >> (32 - k))) & M32


def hashlittle2(key: bytes, pc=0, pb=0):
    a = b = c = (0xDEADBEEF + len(key) + pc) & M32
    c = (c + pb) & M32
    if not key:
        return c, b
    while len(key) > 12:
        a = (a + int.from_bytes(key[0:4], "little")) & M32
        b = (b + int.from_bytes(key[4:8], "little")) & M32
        c = (c + int.from_bytes(key[8:12], "little")) & M32
        a = (a - c) & M32; a ^= rot(c, 4); c = (c + b) & M32
        b = (b - a) & M32; b ^= rot(a, 6); a = (a + c) & M32
        c = (c - b) & M32; c ^= rot(b, 8); b = (b + a) & M32
        a = (a - c) & M32; a ^= rot(c, 16); c = (c + b) & M32
        b = (b - a) & M32; b ^= rot(a, 19); a = (a + c) & M32
        c = (c - b) & M32; c ^= rot(b, 4); b = (b + a) & M32
        key = key[12:]
    tail = key + b"\0" * (12 - len(key))
    a = (a + int.from_bytes(tail[0:4], "little")) & M32
    b = (b + int.from_bytes(tail[4:8], "little")) & M32
    c = (c + int.from_bytes(tail[8:12], "little")) & M32
    c ^= b; c = (c - rot(b, 14)) & M32
    a ^= c; a = (a - rot(c, 11)) & M32
    b ^= a; b = (b - rot(a, 25)) & M32
    c ^= b; c = (c - rot(b, 16)) & M32
    a ^= c; a = (a - rot(c, 4)) & M32
    b ^= a; b = (b - rot(a, 14)) & M32
    c ^= b; c = (c - rot(b, 24)) & M32
    return c, b


def token_hash(token: str) -> int:
    c, b = hashlittle2(token.encode("utf-8"))
    return (c << 32) | b


def is_identifier(chunk: str) -> bool:
    if "://" in chunk or chunk.startswith("www."):
        return True
    at = chunk.find("@")
    if at >= 0 and "." in chunk[at + 1:]:
        return True
    return DOI.match(chunk) is not None


def tokens(text: str, keep_numbers=False):
    """Steps 1 to 3. With keep_numbers, step 3's last rule is skipped (the MinHash schemes' token stream)."""
    # Step 1
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = unicodedata.normalize("NFKC", text).casefold()
    out = []
    # Step 2
    chunk = []
    for ch in text + " ":
        if ch in WHITE_SPACE:
            if chunk:
                s = "".join(chunk)
                if not is_identifier(s):
                    out.extend(chunk_tokens(s, keep_numbers))
            chunk = []
        else:
            chunk.append(ch)
    return out


def chunk_tokens(s: str, keep_numbers=False):
    # Step 3
    result, current, single = [], "", False

    def flush():
        nonlocal current, single
        if current and (keep_numbers or any(unicodedata.category(c).startswith("L") for c in current)):
            result.append(current)
        current, single = "", False

    for ch in s:
        cat = unicodedata.category(ch)
        is_token = cat[0] in "LM" or cat in ("Nd", "Pc")
        if cat[0] == "L" and SINGLE.match(ch):
            flush()
            current, single = ch, True
        elif single and cat[0] == "M":
            current += ch
        elif is_token and not single:
            current += ch
        elif is_token:  # a non-mark token character after a single letter
            flush()
            current = ch
        else:
            flush()
    flush()
    return result


def simhash(hashes):
    counters = [0] * 64
    for h in hashes:
        for i in range(64):  # i = 0 is the most significant bit
            counters[i] += 1 if (h >> (63 - i)) & 1 else -1
    fp = 0
    for i in range(64):
        if counters[i] > 0:
            fp |= 1 << (63 - i)
    return fp


def fingerprint_string(fp: int) -> str:
    return "simhash-doc-v1:" + base64.b32encode(fp.to_bytes(8, "big")).decode().rstrip("=").lower()


def check(path):
    v = json.load(open(path, encoding="utf-8"))
    if v["text"] is None:
        return []
    errors = []
    toks = tokens(v["text"])
    if toks != v["tokens"]:
        errors.append(f"tokens differ: {toks[:10]} vs {v['tokens'][:10]}")
    for t in set(toks):
        if format(token_hash(t), "016x") != v["token_hashes"].get(t):
            errors.append(f"hash of {t!r} differs")
    expected = fingerprint_string(simhash([token_hash(t) for t in toks])) if toks else None
    if expected != v["fingerprint"]:
        errors.append(f"fingerprint {expected} vs {v['fingerprint']}")
    return errors


def main():
    assert hashlittle2(b"") == (0xDEADBEEF, 0xDEADBEEF)
    assert hashlittle2(b"Four score and seven years ago") == (0x17770551, 0xCE7226E6)
    assert hashlittle2(b"Four score and seven years ago", 0, 1) == (0xE3607CAE, 0xBD371DE4)
    folder = sys.argv[1] if len(sys.argv) > 1 else "testdata/vectors/simhash-doc-v1"
    files = sorted(f for f in os.listdir(folder) if f.endswith(".json"))
    failed = 0
    for f in files:
        errs = check(os.path.join(folder, f))
        if errs:
            failed += 1
            print(f"FAIL {f}: " + "; ".join(errs[:3]))
    print(f"{len(files) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
