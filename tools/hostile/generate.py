#!/usr/bin/env python3
"""Generate the hostile-input corpus for neardup (issue 18): files a crawler or an archive may be fed.

Usage:
    python3 tools/hostile/generate.py OUTDIR [--scale ci|full]

Writes several hundred inputs into OUTDIR/<class>/ and OUTDIR/manifest.jsonl, one JSON object per line:

    {"id": "html/deep-div-stray-1000000", "path": "html/deep-div-stray-1000000.html", "class": "html",
     "medium": "html", "cmd": ["{bin}", "hash", "{path}"], "expect": "either", "note": "..."}

Placeholders in commands: {bin} the binary, {path} the input's absolute path, {corpus} OUTDIR (absolute),
{tmp} a fresh empty directory for this entry. `expect` is "ok" (exit 0), "refused" (a documented non-zero
exit status, default 1, with an error on stderr that names the file) or "either". Optional keys, checked by
run.py:
    exit_codes        the non-zero statuses allowed for a refusal (default [1]; parameter errors: [2])
    names             strings of which one must appear in stderr on a refusal (default: the file's path or name)
    must_not_contain  strings that must not appear in stdout or stderr (e.g. the text of /etc/passwd)
    stderr_mentions   strings that must all appear in stderr, whatever the exit status
    stderr_regex      a regular expression stderr must match, whatever the exit status
    stdout_contains   strings stdout must contain when the exit status is 0
    stdout_must_not_contain  strings that must not appear in stdout
    fifo_feed         text that run.py writes into the FIFO at `path` while the command runs (a producer)
    stdout_lines      the exact number of lines stdout must have when the exit status is 0
    distinct_stdout_lines  the number of distinct stdout lines when the exit status is 0
    setup             commands run first (each must exit 0), e.g. `index create`
    followup          [{"cmd": [...], "stdout_contains": "...", "only_if_ok": true}] run after the command

Everything is deterministic (fixed seeds, zip and gzip timestamps pinned); only the Python 3.11 standard
library is used. Real files for truncations and bit flips are read from testdata/vectors/simhash-doc-v1/inputs
and, when present, ../shared/eval/crossmedia/files.tar.zst (read through the `zstd` command; skipped with a
message when either is missing, so the corpus is smaller there). They are never copied into the repository.

Classes and what each proves (the binary must never panic, abort, hang, or go over the memory ceiling, and
every refusal names the file):
    html      parser amplification: 10^7 attributes on one element, a million nested <div> closed by a stray
              end tag, a million <div/>, a million '<' without '>', fake closing tags in comments and
              attribute values, formatting-element reconstruction (<b id=1>..<b id=N> then many <p>), the
              adoption agency, deep tables, foster parenting, huge entity counts
    epub      the container: deeply nested chapters, zip-slip names, zip bombs (and lying sizes), missing
              spine items, a spine that repeats one chapter thousands of times, paths outside the archive
    warc      the record reader: 10^5 records separated by bare LF, deeply nested HTML in a record, gzip
              Content-Encoding bombs, a large .warc.gz under the ratio limit, records without URI, with
              garbage status lines or no HTTP headers (these must be reported, not dropped in silence),
              lying Content-Length and chunk sizes
    pdf       the PDF reader: 3*10^6 Tj operators, a 10^6-entry /Contents array, RunLength and Flate bombs,
              10^6 nested arrays and dictionaries (stack overflow), xref and page-tree loops, lying /Length,
              truncations and bit flips of real PDFs
    xml       entity amplification (10x linear, billion laughs, quadratic), external entities (the text of
              /etc/passwd must never appear, and the fingerprint must equal the one without the entity), deep
              nesting, DTD tricks
    text      byte-order marks alone, invalid UTF-8, NUL bytes, NFKC expansion (U+FDFA), one huge line,
              long runs of combining marks (canonical reordering)
    mutated   truncations and bit flips of real HTML, XML, EPUB, WARC, .warc.gz and .jsonl.gz files
    fs        FIFOs (named, through a link, inside a directory), dangling links, link loops, names with a
              newline, names that are not UTF-8 (two names differing in one invalid byte are two documents),
              an empty file
    jsonl     ids (30-digit numbers, "1" and 1), missing fields, a BOM, invalid UTF-8, a huge line, deep JSON
    index     add-fingerprints with an invalid UTF-8 line in the middle: the good lines after it are stored
    params    absurd parameters (--num-perm 10^8, --threshold NaN / 1.5, -k 1000) are refused quickly

Scale: `ci` (default) keeps the run over the corpus within a few minutes on 2 cores with a debug build; the
sizes that shrink are marked SCALE below with the `full` size beside them (the sizes of issue 18).
"""
import argparse
import gzip
import io
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VECTORS = os.path.join(REPO, "testdata", "vectors", "simhash-doc-v1", "inputs")
CROSSMEDIA = os.path.join(os.path.dirname(REPO), "shared", "eval", "crossmedia", "files.tar.zst")

HASH = ["{bin}", "hash", "{path}"]
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
PASSWD_MARK = "root:x:0:0"


class Corpus:
    def __init__(self, out, scale):
        self.out = os.path.abspath(out)
        self.scale = scale
        self.entries = []
        self.ids = set()

    def big(self, ci, full):
        """SCALE: the `ci` size, or the `full` one."""
        return full if self.scale == "full" else ci

    def path(self, cls, name):
        d = os.path.join(self.out, cls)
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, name)

    def add(self, cls, name, data, medium, note, cmd=None, expect="either", **extra):
        """Writes one input file (bytes, str, or an iterable of byte chunks) and its manifest line."""
        p = self.path(cls, name)
        with open(p, "wb") as f:
            if isinstance(data, str):
                f.write(data.encode("utf-8"))
            elif isinstance(data, (bytes, bytearray)):
                f.write(data)
            else:
                for chunk in data:
                    f.write(chunk)
        return self.entry(cls, name, medium, note, cmd=cmd, expect=expect, **extra)

    def entry(self, cls, name, medium, note, cmd=None, expect="either", **extra):
        """A manifest line for something already on disk (a FIFO, a link, a directory)."""
        rel = os.path.join(cls, name) if name is not None else cls
        ident = cls + "/" + os.fsdecode(os.fsencode(name)).replace("\n", "\\n") if name else cls
        base, n = ident, 2
        while ident in self.ids:
            ident, n = f"{base}#{n}", n + 1
        self.ids.add(ident)
        e = {"id": ident, "path": rel, "class": cls, "medium": medium,
             "cmd": cmd or HASH, "expect": expect, "note": note}
        e.update(extra)
        self.entries.append(e)
        return e

    def write_manifest(self):
        with open(os.path.join(self.out, "manifest.jsonl"), "w", encoding="utf-8") as f:
            for e in self.entries:
                f.write(json.dumps(e, ensure_ascii=True) + "\n")


# ---------------------------------------------------------------------------------------------------------
# Builders

def gzip_repeat(chunk, times, level=9):
    """A gzip member whose content is `chunk` repeated `times` times, built without holding the whole: the
    compressed form of `chunk` after a full flush is a self-contained run of deflate blocks that can be
    repeated."""
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(times):
        crc = zlib.crc32(chunk, crc)
    size = (len(chunk) * times) & 0xFFFFFFFF
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    tail = zlib.compressobj(level, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)  # an empty final block
    return b"".join([header, block * times, tail, struct.pack("<II", crc, size)])


def zlib_repeat(chunk, times, level=9):
    """As gzip_repeat, with the zlib wrapper (PDF /FlateDecode)."""
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    adler = 1
    for _ in range(times):
        adler = zlib.adler32(chunk, adler)
    tail = zlib.compressobj(level, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
    return b"".join([b"\x78\xda", block * times, tail, struct.pack(">I", adler)])


def ratio_chunk(rng, size=1 << 16, entropy_every=1200):
    """A chunk of text-like bytes that deflate compresses roughly 150-250 to 1."""
    out = bytearray(b" " * size)
    for i in range(0, size, entropy_every):
        for j in range(4):
            if i + j < size:
                out[i + j] = rng.randrange(97, 123)
    return bytes(out)


def pdf_file(objects, root=1, trailer_extra=b"", header=b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", prev=None):
    """A PDF with a classic xref table; objects[i] is the body of object i+1."""
    out = bytearray(header)
    offsets = []
    for i, body in enumerate(objects):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    prev_part = b"" if prev is None else b" /Prev %d" % (xref if prev == "self" else prev)
    out += b"trailer\n<< /Size %d /Root %d 0 R%s %s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, root, prev_part, trailer_extra, xref)
    return bytes(out)


def stream(data, extra=b"", length=None):
    n = b"%d" % len(data) if length is None else length
    return b"<< /Length " + n + b" " + extra + b" >>\nstream\n" + data + b"\nendstream"


def one_page_pdf(content, page_extra=b"", content_extra=b"", length=None, contents_ref=b"5 0 R", more=()):
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
        b"/Contents " + contents_ref + b" " + page_extra + b" >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        stream(content, content_extra, length),
    ]
    objs.extend(more)
    return pdf_file(objs)


HELLO = b"BT /F1 12 Tf 72 700 Td (near duplicate documents are found here) Tj ET"


def zip_bytes(entries, compress=zipfile.ZIP_DEFLATED):
    """A zip from (name, data) pairs in order, timestamps pinned; name may be bytes-like str."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, FIXED_TIME)
            info.compress_type = zipfile.ZIP_STORED if name == "mimetype" else compress
            if isinstance(data, str):
                data = data.encode("utf-8")
            z.writestr(info, data)
    return buf.getvalue()


CONTAINER = ('<?xml version="1.0"?><container version="1.0" '
             'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
             '<rootfile full-path="{opf}" media-type="application/oebps-package+xml"/></rootfiles></container>')


def opf(items, spine):
    """items: (id, href); spine: idrefs."""
    man = "".join(f'<item id="{i}" href="{h}" media-type="application/xhtml+xml"/>' for i, h in items)
    sp = "".join(f'<itemref idref="{i}"/>' for i in spine)
    return ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            '<dc:identifier id="id">x</dc:identifier><dc:title>t</dc:title><dc:language>en</dc:language>'
            f'</metadata><manifest>{man}</manifest><spine>{sp}</spine></package>')


def xhtml(body):
    return ('<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>c'
            '</title></head><body>' + body + '</body></html>')


def epub(chapters, spine=None, extra=(), opf_path="OEBPS/content.opf", items=None):
    """chapters: (href, data) relative to the OPF's folder."""
    items = items if items is not None else [(f"c{i}", h) for i, (h, _) in enumerate(chapters)]
    spine = spine if spine is not None else [i for i, _ in items]
    folder = os.path.dirname(opf_path)
    entries = [("mimetype", "application/epub+zip"),
               ("META-INF/container.xml", CONTAINER.format(opf=opf_path)),
               (opf_path, opf(items, spine))]
    entries += [(folder + "/" + h if folder else h, d) for h, d in chapters]
    entries += list(extra)
    return zip_bytes(entries)


def warc_record(block, uri="http://example.org/", wtype="response", nl=b"\r\n", length=None,
                extra_headers=(), content_type=b"application/http; msgtype=response", n=0):
    h = [b"WARC/1.0", b"WARC-Type: " + wtype.encode()]
    if uri is not None:
        h.append(b"WARC-Target-URI: " + uri.encode())
    h += [b"WARC-Date: 2024-01-01T00:00:00Z",
          b"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-%012d>" % n,
          b"Content-Type: " + content_type]
    h += list(extra_headers)
    h.append(b"Content-Length: " + (b"%d" % len(block) if length is None else length))
    return nl.join(h) + nl + nl + block + nl + nl


def http(body, status=b"HTTP/1.1 200 OK", headers=(b"Content-Type: text/html; charset=utf-8",), nl=b"\r\n"):
    return nl.join([status] + list(headers)) + nl + nl + body


def page(words):
    return b"<!DOCTYPE html><html><body><main><p>" + words + b"</p></main></body></html>"


WORDS = ("near duplicate detection finds documents that share most of their words across media and "
         "encodings while different documents stay apart").split()


def prose(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


# ---------------------------------------------------------------------------------------------------------
# Classes

def gen_html(c):
    rng = random.Random(18_001)
    cls = "html"
    M = c.big(1_000_000, 1_000_000)

    def add(name, data, note, **kw):
        c.add(cls, name + ".html", data, "html", note, **kw)

    head = "<!DOCTYPE html><html><body><main><p>some words before the trap</p>"
    # SCALE: 10^6 attributes in ci, 10^7 in full (issue 18: the release binary hung on 10^7).
    for n in sorted({10_000, 100_000, c.big(1_000_000, 10_000_000)}):
        add(f"attrs-distinct-{n}", head + "<div " + " ".join(f"a{i}" for i in range(n)) + ">x</div>",
            f"{n} distinct attributes on one element")
        add(f"attrs-same-{n}", head + "<div " + "a " * n + ">x</div>", f"one attribute name repeated {n} times")
    add("attrs-valued-1000000", head + "<p " + "".join(f'a{i}="v" ' for i in range(M)) + ">x</p>",
        "10^6 attributes with values")
    for n in (100_000, M):
        add(f"deep-div-stray-x-{n}", head + "<div></x>" * n + "deep", f"{n} x '<div></x>': nested, stray ends")
        add(f"deep-div-then-span-{n}", head + "<div>" * n + "deep</span>", f"{n} <div> then a stray </span>")
        add(f"self-closing-div-{n}", head + "<div/>" * n + "end", f"{n} x '<div/>' (opens {n} divs)")
        add(f"lt-no-gt-{n}", head + "<" * n, f"{n} '<' and no '>'")
        add(f"lt-letter-{n}", head + "<a" * n, f"{n} '<a' and no '>'")
        add(f"fake-close-comment-{n}", head + "<div><!-- </div> -->" * n + "x",
            f"{n} divs, each followed by a comment holding </div>")
        add(f"fake-close-attr-{n}", head + '<div title="</div>">' * n + "x",
            f"{n} divs whose attribute value holds </div>")
        add(f"deep-table-{n // 10}", head + "<table><tr><td>" * (n // 10) + "cell",
            f"{n // 10} nested tables")
        add(f"anchors-{n // 10}", head + "<a href=x>" * (n // 10) + "link",
            f"{n // 10} unclosed <a> (adoption agency on each)")
        add(f"misnested-b-p-{n // 10}", head + "<b><p>x</b>" * (n // 10),
            f"{n // 10} misnested <b><p></b> (adoption agency)")
        add(f"foster-{n}", head + "<table>" + "x<td>" * n, f"{n} foster-parented text runs in a table")
        add(f"entities-amp-{n}", head + "<p>" + "&amp;" * n, f"{n} &amp; references")
        add(f"entities-numeric-{n}", head + "<p>" + "&#x41;&#66;" * (n // 2), f"{n} numeric references")
        add(f"entities-unterminated-{n}", head + "<p>" + "&notin" * n, f"{n} named references without ';'")
        add(f"svg-nest-{n // 10}", head + "<svg>" + "<g>" * (n // 10), f"{n // 10} nested svg groups")
        add(f"template-nest-{n // 10}", head + "<template>" * (n // 10) + "t", f"{n // 10} nested templates")
    for formats, paras in ((200, 2_000), (1_000, 1_000), (2_000, 2_000), (c.big(3_000, 10_000), c.big(3_000, 10_000))):
        add(f"reconstruct-{formats}x{paras}",
            head + "<p>" + "".join(f"<b id={i}>" for i in range(formats)) + "</p>" + "<p>x" * paras,
            f"{formats} distinct open <b> then {paras} x '<p>x': the formatting list rebuilt in each paragraph")
    add("comment-unclosed", head + "<!--" + "a--" * M, "an unclosed comment of 3 MB")
    add("script-escape", head + "<script><!--<script>" + "x" * M, "a script in the double-escaped state")
    add("meta-utf16", b'<meta charset="utf-16"><p>' + "words here".encode("utf-16-le"),
        "meta charset utf-16 on ASCII-compatible bytes")
    add("meta-utf7", '<meta http-equiv="Content-Type" content="text/html; charset=utf-7"><p>+AGEAYgBj-',
        "charset UTF-7 (never honoured)")
    add("attr-value-huge", head + '<p title="' + "x" * (8 * M) + '">words</p>', "an 8 MB attribute value")
    add("tag-name-huge", head + "<" + "x" * (8 * M) + ">words", "an 8 MB tag name")
    add("text-no-space", head + "<p>" + "y" * (8 * M), "one 8 MB word")
    add("null-bytes", head + "<p>a\x00b\x00" * 1000, "NUL bytes in text", expect="either")
    add("many-paragraphs", head + "".join(f"<p>{prose(rng, 5)}</p>" for _ in range(100_000)),
        "10^5 ordinary paragraphs (must be ok)", expect="ok")


def gen_epub(c):
    cls = "epub"
    rng = random.Random(18_002)

    def add(name, data, note, **kw):
        c.add(cls, name + ".epub", data, "epub", note, **kw)

    ok_chapter = xhtml("<p>" + prose(rng, 200) + "</p>")
    add("baseline", epub([("c1.xhtml", ok_chapter), ("c2.xhtml", ok_chapter)]), "a plain EPUB (must be ok)",
        expect="ok")
    for n in (10_000, 100_000, 1_000_000):
        add(f"deep-div-{n}", epub([("c1.xhtml", xhtml("<div>" * n + "deep" + "</div>" * n))]),
            f"a chapter with {n} nested divs")
        add(f"deep-unclosed-{n}", epub([("c1.xhtml", xhtml("<div>" * n + "deep"))]),
            f"a chapter with {n} unclosed divs")
    add("deep-span-stray", epub([("c1.xhtml", xhtml("<span>" * 1_000_000 + "deep</x>"))]),
        "10^6 nested spans and a stray end tag in XHTML")
    for name in ("../../etc/x.xhtml", "/etc/abs.xhtml", "OEBPS/../../../outside.xhtml"):
        safe = name.replace("/", "_").replace(".", "d")
        add(f"zip-slip-entry-{safe}", epub([("c1.xhtml", ok_chapter)], extra=[(name, ok_chapter)]),
            f"an entry named {name}")
        add(f"zip-slip-href-{safe}",
            epub([("c1.xhtml", ok_chapter)], items=[("c1", "c1.xhtml"), ("c2", name)], extra=[(name, ok_chapter)]),
            f"the spine names {name}")
    add("href-etc-passwd",
        epub([("c1.xhtml", ok_chapter)], items=[("c1", "c1.xhtml"), ("p", "../../../../../../../../etc/passwd")]),
        "the spine names ../../../etc/passwd: never read from the file system", must_not_contain=[PASSWD_MARK])
    add("href-absolute-passwd", epub([("c1.xhtml", ok_chapter)], items=[("c1", "c1.xhtml"), ("p", "/etc/passwd")]),
        "the spine names /etc/passwd", must_not_contain=[PASSWD_MARK])
    # SCALE: bombs inflate to 256 MiB in ci, 2 GiB in full.
    bomb_mb = c.big(256, 2048)

    def bomb_epub(chunk, times, name="c1.xhtml"):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr(zipfile.ZipInfo("mimetype", FIXED_TIME), "application/epub+zip")
            z.writestr(zipfile.ZipInfo("META-INF/container.xml", FIXED_TIME), CONTAINER.format(opf="content.opf"))
            z.writestr(zipfile.ZipInfo("content.opf", FIXED_TIME), opf([("c1", name)], ["c1"]))
            info = zipfile.ZipInfo(name, FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            with z.open(info, "w", force_zip64=True) as w:
                w.write(b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><p>')
                for _ in range(times):
                    w.write(chunk)
                w.write(b"</p></body></html>")
        return buf.getvalue()

    add(f"bomb-spaces-{bomb_mb}m", bomb_epub(b" " * (1 << 20), bomb_mb), f"a chapter of {bomb_mb} MiB of spaces")
    add(f"bomb-words-{bomb_mb // 4}m", bomb_epub(b"lol " * (1 << 18), bomb_mb // 4),
        f"a chapter of {bomb_mb // 4} MiB of one word")
    add("bomb-ratio-200", bomb_epub(ratio_chunk(rng), 1024), "a chapter of 64 MiB at about 200:1")
    # A zip whose headers lie about the uncompressed size (small), over a member that inflates to 64 MiB.
    lying = bytearray(bomb_epub(b"a" * (1 << 20), 64, name="c1.xhtml"))
    # Local file headers (PK 3 4) and central directory entries (PK 1 2): where the name's length, the name
    # and the uncompressed size stand in each.
    for signature, name_len_at, name_at, size_at in ((b"PK\x03\x04", 26, 30, 22), (b"PK\x01\x02", 28, 46, 24)):
        pos = lying.find(signature)
        while pos >= 0:
            name_len = struct.unpack_from("<H", lying, pos + name_len_at)[0]
            if lying[pos + name_at:pos + name_at + name_len] == b"c1.xhtml":
                struct.pack_into("<I", lying, pos + size_at, 100)
            pos = lying.find(signature, pos + 4)
    add("bomb-lying-size", bytes(lying), "a member that declares 100 bytes and inflates to 64 MiB")
    many = [(f"c{i}.xhtml", xhtml(f"<p>chapter {i} words</p>")) for i in range(20_000)]
    add("many-entries-20000", epub(many), "20,000 chapters in the spine")
    add("spine-repeat", epub([("c1.xhtml", xhtml("<p>" + prose(rng, 2000) + "</p>"))], spine=["c0"] * 2000),
        "one 12 KB chapter named 2,000 times in the spine")
    add("spine-missing-item", epub([("c1.xhtml", ok_chapter)], spine=["c0", "nope", "c0"]),
        "the spine names an id the manifest lacks")
    add("spine-missing-file", epub([("c1.xhtml", ok_chapter)], items=[("c0", "c1.xhtml"), ("c1", "gone.xhtml")]),
        "the manifest names a file the archive lacks")
    add("spine-empty", epub([("c1.xhtml", ok_chapter)], spine=[]), "an empty spine")
    add("opf-missing", zip_bytes([("mimetype", "application/epub+zip"),
                                  ("META-INF/container.xml", CONTAINER.format(opf="none.opf"))]),
        "container.xml names an OPF that is not there")
    add("container-garbage", zip_bytes([("mimetype", "application/epub+zip"),
                                        ("META-INF/container.xml", "<<<<" * 10_000)]),
        "container.xml is not XML")
    add("container-deep", zip_bytes([("mimetype", "application/epub+zip"),
                                     ("META-INF/container.xml", "<a>" * 1_000_000)]),
        "container.xml nests 10^6 elements")
    add("opf-deep", zip_bytes([("mimetype", "application/epub+zip"),
                               ("META-INF/container.xml", CONTAINER.format(opf="c.opf")),
                               ("c.opf", "<package>" + "<x>" * 1_000_000)]),
        "the OPF nests 10^6 elements")
    add("opf-billion-laughs", zip_bytes([
        ("mimetype", "application/epub+zip"), ("META-INF/container.xml", CONTAINER.format(opf="c.opf")),
        ("c.opf", billion_laughs("package"))]), "billion laughs in the OPF")
    add("chapter-billion-laughs", epub([("c1.xhtml", billion_laughs("html"))]), "billion laughs in a chapter")
    add("chapter-xxe", epub([("c1.xhtml", '<?xml version="1.0"?><!DOCTYPE html [<!ENTITY x SYSTEM '
                                          '"file:///etc/passwd">]><html xmlns="http://www.w3.org/1999/xhtml">'
                                          '<body><p>safe words &x;</p></body></html>')]),
        "an external entity in a chapter", must_not_contain=[PASSWD_MARK])
    add("chapter-is-pdf-bomb", epub([("c1.xhtml", one_page_pdf(HELLO))]), "a chapter that is a PDF")
    add("nested-epub", epub([("c1.xhtml", epub([("c1.xhtml", ok_chapter)]))]), "a chapter that is an EPUB")


def billion_laughs(root, levels=10):
    s = ['<?xml version="1.0"?><!DOCTYPE ' + root + ' [<!ENTITY l0 "lol">']
    for i in range(1, levels):
        s.append(f'<!ENTITY l{i} "' + f"&l{i - 1};" * 10 + '">')
    s.append(f"]><{root}>&l{levels - 1};</{root}>")
    return "".join(s)


def gen_warc(c):
    cls = "warc"
    rng = random.Random(18_003)

    def add(name, data, note, **kw):
        c.add(cls, name, data, "warc", note, **kw)

    good = lambda i=0: warc_record(http(page(prose(rng, 30).encode())), uri=f"http://example.org/{i}", n=i)
    mention = lambda name: {"stderr_mentions": [name]}
    add("baseline.warc", b"".join(good(i) for i in range(3)), "three plain records (must be ok)", expect="ok",
        stdout_lines=3)
    # SCALE: 2*10^4 records in ci, 10^5 in full.
    for n in sorted({2_000, c.big(20_000, 100_000)}):
        add(f"bare-lf-{n}.warc",
            b"".join(warc_record(http(page(b"record %d words" % i), nl=b"\n"), uri=f"http://e.org/{i}", nl=b"\n",
                                 n=i) for i in range(n)),
            f"{n} records, headers and separators with bare LF")
        add(f"crlf-{n}.warc", b"".join(good(i) for i in range(n)), f"{n} ordinary records", expect="ok",
            stdout_lines=n)
    for n in (100_000, 1_000_000):
        add(f"deep-html-{n}.warc", good(0) + warc_record(http(b"<div>" * n + b"deep"), n=1) + good(2),
            f"a record of {n} nested divs between two good ones")
        add(f"deep-stray-{n}.warc", warc_record(http(b"<div></x>" * n + b"deep"), n=1),
            f"a record of {n} x '<div></x>'")
    # Content-Encoding: gzip bombs. SCALE: ci a 1 MiB chunk x 800 per record (4 MB -> 800 MiB at about
    # 200:1), full x 3200 (16 MB -> x200, as in issue 18).
    times = c.big(800, 3200)
    zeros = gzip_repeat(b"\0" * (1 << 20), times)
    text_bomb = gzip_repeat(ratio_chunk(rng, 1 << 20), times)
    enc = (b"Content-Type: text/html", b"Content-Encoding: gzip")
    add("gzip-bomb-zeros.warc", warc_record(http(zeros, headers=enc), n=1) + good(2),
        f"Content-Encoding gzip of {times} MiB of zeros", **mention("gzip-bomb-zeros.warc"))
    add("gzip-bomb-ratio200.warc", warc_record(http(text_bomb, headers=enc), n=1) + good(2),
        f"Content-Encoding gzip of {times} MiB of text at about 200:1")
    add("gzip-bomb-x3.warc", b"".join(warc_record(http(gzip_repeat(ratio_chunk(rng, 1 << 20), times // 2),
                                                       headers=enc), n=i, uri=f"http://e.org/{i}")
                                      for i in range(3)),
        "three gzip-encoded records of half that size each")
    add("gzip-transfer-chunked-bomb.warc",
        warc_record(http(chunked([zeros]), headers=(b"Content-Type: text/html", b"Transfer-Encoding: chunked",
                                                    b"Content-Encoding: gzip")), n=1),
        "a chunked, gzip-encoded bomb")
    add("gzip-nested.warc", warc_record(http(gzip.compress(gzip.compress(page(b"words " * 1000), mtime=0), mtime=0),
                                             headers=(b"Content-Type: text/html",
                                                      b"Content-Encoding: gzip, gzip")), n=1),
        "Content-Encoding: gzip, gzip")
    add("gzip-garbage.warc", warc_record(http(b"\x1f\x8b\x08\x00garbage", headers=enc), n=1) + good(2),
        "Content-Encoding gzip over garbage", **mention("gzip-garbage.warc"))
    # A large .warc.gz, each record its own gzip member, under the ratio limit (about 50:1), mostly records
    # that are not documents (images), so that it is all decompressed but little is fingerprinted.
    # SCALE: ci 1 GiB uncompressed (about 23 MB on disk), full about 1 GB on disk (50 GiB uncompressed).
    img = b"\x89PNG" + ratio_chunk(rng, 1 << 20, entropy_every=200)
    member = gzip.compress(warc_record(http(img, headers=(b"Content-Type: image/png",)), n=7), 9, mtime=0)
    big_n = c.big(1024, 50 * 1024)

    def large():
        yield gzip.compress(good(0), mtime=0)
        for _ in range(big_n):
            yield member
        yield gzip.compress(good(1), mtime=0)

    add(f"large-{big_n}m.warc.gz", large(), f"a .warc.gz of {big_n} image records of 1 MiB (about 50:1) "
        "between two pages")
    small_members = b"".join(gzip.compress(good(i), mtime=0) for i in range(20_000))
    add("members-20000.warc.gz", small_members, "20,000 gzip members, one record each", expect="ok",
        stdout_lines=20_000)
    add("whole-gzip.warc.gz", gzip.compress(b"".join(good(i) for i in range(100)), mtime=0),
        "100 records in one gzip member", expect="ok", stdout_lines=100)
    # Records that must be reported, not dropped in silence.
    for name, rec in [
        ("no-uri", warc_record(http(page(b"no uri here")), uri=None, n=1)),
        ("status-garbage", warc_record(http(page(b"garbage status line"), status=b"HTTP/1.1 abc def"), n=1)),
        ("status-words", warc_record(http(page(b"garbage status line"), status=b"complete nonsense"), n=1)),
        ("status-empty", warc_record(http(page(b"empty status line"), status=b""), n=1)),
        ("no-http-headers", warc_record(page(b"no http headers at all"), n=1)),
        ("no-http-blank-line", warc_record(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + page(b"x"), n=1)),
    ]:
        add(f"{name}.warc", good(0) + rec + good(2), f"a record with {name.replace('-', ' ')} between good ones",
            **mention(f"{name}.warc"))
    # Lying Content-Length.
    body = http(page(b"the record body words"))
    for name, length in [("too-large", b"999999999"), ("too-small", b"10"), ("negative", b"-5"),
                         ("non-numeric", b"abc"), ("overflow", b"99999999999999999999999999"), ("plus", b"+12"),
                         ("empty", b""), ("hex", b"0x20")]:
        add(f"length-{name}.warc", good(0) + warc_record(body, n=1, length=length) + good(2),
            f"Content-Length {length.decode() or '(empty)'}")
    add("length-twice.warc", good(0) + warc_record(body, n=1, extra_headers=(b"Content-Length: 5",)) + good(2),
        "two conflicting Content-Length headers")
    # Chunked transfer encoding with lying chunk sizes.
    te = (b"Content-Type: text/html", b"Transfer-Encoding: chunked")
    text = page(b"chunked words " * 20)
    for name, raw in [
        ("ok", chunked([text[:50], text[50:]])),
        ("size-too-large", b"ffff\r\n" + text + b"\r\n0\r\n\r\n"),
        ("size-huge", b"ffffffffffffffff\r\n" + text + b"\r\n0\r\n\r\n"),
        ("size-overflow", b"1" + b"0" * 40 + b"\r\n" + text + b"\r\n0\r\n\r\n"),
        ("size-negative", b"-1\r\n" + text + b"\r\n0\r\n\r\n"),
        ("size-garbage", b"zz\r\n" + text + b"\r\n0\r\n\r\n"),
        ("size-too-small", b"5\r\n" + text + b"\r\n0\r\n\r\n"),
        ("no-terminator", b"%x\r\n" % len(text) + text + b"\r\n"),
        ("extension-huge", b"%x;" % len(text) + b"x" * 1_000_000 + b"\r\n" + text + b"\r\n0\r\n\r\n"),
        ("many-tiny", b"".join(b"1\r\n%c\r\n" % ch for ch in text * 200) + b"0\r\n\r\n"),
    ]:
        add(f"chunked-{name}.warc", good(0) + warc_record(http(raw, headers=te), n=1) + good(2),
            f"chunked transfer encoding: {name.replace('-', ' ')}", expect="ok" if name == "ok" else "either")
    # Headers.
    add("warc-header-lines-1000000.warc",
        b"WARC/1.0\r\nWARC-Type: response\r\n" + b"X-A: b\r\n" * 1_000_000 + b"Content-Length: 0\r\n\r\n",
        "a record with 10^6 header lines")
    add("warc-header-line-8m.warc", b"WARC/1.0\r\nWARC-Type: response\r\nX-A: " + b"b" * (8 << 20) + b"\r\n",
        "an 8 MiB header line")
    add("http-header-lines-1000000.warc", warc_record(http(b"x", headers=[b"X-A: b"] * 1_000_000), n=1),
        "an HTTP response with 10^6 header lines")
    add("no-blank-line.warc", b"WARC/1.0\r\nWARC-Type: response\r\n" + b"x" * 100_000, "headers never end")
    add("only-requests.warc", b"".join(warc_record(b"GET / HTTP/1.1\r\n\r\n", wtype="request", n=i,
                                                   content_type=b"application/http; msgtype=request")
                                       for i in range(1000)), "1,000 request records and no response")
    add("version-garbage.warc", b"WARC/9.9\r\n" + good(1)[10:], "an unknown WARC version")
    add("binary-after-record.warc", good(0) + bytes(rng.randrange(256) for _ in range(10_000)),
        "binary garbage after a good record", **mention("binary-after-record.warc"))
    add("pdf-record.warc", warc_record(http(one_page_pdf(b"[" * 1_000_000), headers=(b"Content-Type: application/pdf",)),
                                       n=1) + good(2), "a PDF record with 10^6 nested arrays")
    add("xml-laughs-record.warc", warc_record(http(billion_laughs("a").encode(),
                                                   headers=(b"Content-Type: application/xml",)), n=1) + good(2),
        "an XML record with billion laughs")
    add("charset-utf16-record.warc", warc_record(http(b"\xfe\xff", headers=(b"Content-Type: text/plain; charset=utf-16",)),
                                                 n=1) + good(2), "a text record that is a UTF-16BE BOM alone")


def chunked(parts):
    return b"".join(b"%x\r\n" % len(p) + p + b"\r\n" for p in parts) + b"0\r\n\r\n"


def gen_pdf(c):
    cls = "pdf"

    def add(name, data, note, **kw):
        c.add(cls, name + ".pdf", data, "pdf", note, **kw)

    add("baseline", one_page_pdf(HELLO), "one page of text (must be ok)", expect="ok")
    # SCALE: 10^6 Tj in ci, 3*10^6 in full (issue 18: 1.1-1.4 GB and 60 s in release).
    for n in sorted({30_000, c.big(1_000_000, 3_000_000)}):
        add(f"tj-{n}", one_page_pdf(b"BT /F1 12 Tf 72 700 Td\n" + b"(word) Tj\n" * n + b"ET"), f"{n} Tj operators")
        m = min(n, c.big(300_000, n))  # SCALE: positioned runs are sorted into lines: ci at most 3*10^5
        add(f"tj-positioned-{m}",
            one_page_pdf(b"BT /F1 12 Tf\n" + b"".join(b"1 0 0 1 %d %d Tm (w) Tj\n" % (i % 500, (i * 7) % 700)
                                                       for i in range(m)) + b"ET"),
            f"{m} Tj operators, each at its own position")
        add(f"tj-array-{n}", one_page_pdf(b"BT /F1 12 Tf 72 700 Td [" + b"(a) -20 " * n + b"] TJ ET"),
            f"one TJ array of {n} strings")
    # SCALE: up to 3*10^5 /Contents entries in ci, 10^6 in full.
    for n in sorted({10_000, 100_000, c.big(300_000, 1_000_000)}):
        add(f"contents-array-{n}", one_page_pdf(HELLO, contents_ref=b"[" + b"5 0 R " * n + b"]"),
            f"a /Contents array of {n} references to one stream")
    for n in (10_000, 100_000):
        kids = b"[" + b"3 0 R " * n + b"]"
        objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids " + kids + b" /Count %d >>" % n,
                b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
                b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", stream(HELLO)]
        add(f"kids-repeat-{n}", pdf_file(objs), f"{n} pages that are one page object")
    # RunLength bombs: 2 bytes -> 128. SCALE: ci 2^21 runs (256 MiB; spaces: 1 GiB), full 2^23 (1 GiB; 4 GiB).
    for byte, what in ((b" ", "spaces"), (b"a", "one huge operator"), (b"(", "nested string parentheses"),
                       (b"[", "nested arrays")):
        runs = c.big(1 << 21, 1 << 23) * (4 if byte == b" " else 1)
        add(f"runlength-bomb-{what.split()[-1]}", one_page_pdf((b"\x81" + byte) * runs + b"\x80",
                                                              b"/Filter /RunLengthDecode"),
            f"RunLengthDecode to {runs * 128 >> 20} MiB of {what}")
    # Flate bombs. SCALE: ci 256 MiB (spaces: 1 GiB), full 2 GiB (spaces: 4 GiB).
    mib = c.big(256, 2048)
    add(f"flate-bomb-spaces-{mib * 4}m", one_page_pdf(zlib_repeat(b" " * (1 << 20), mib * 4), b"/Filter /FlateDecode"),
        f"FlateDecode to {mib * 4} MiB of spaces")
    add(f"flate-bomb-tj-{mib}m",
        one_page_pdf(zlib_repeat(b"(ab) Tj " * (1 << 17), mib), b"/Filter /FlateDecode"),
        f"FlateDecode to {mib} MiB of Tj operators")
    add("flate-chain-1000", one_page_pdf(nested_flate(HELLO, 1000), b"/Filter [" + b"/FlateDecode " * 1000 + b"]"),
        "a stream under 1,000 FlateDecode filters")
    add("predictor-huge-columns", one_page_pdf(zlib.compress(HELLO), b"/Filter /FlateDecode /DecodeParms "
                                                                    b"<< /Predictor 12 /Columns 2147483647 >>"),
        "a PNG predictor with 2^31 columns")
    add("predictor-huge-colors", one_page_pdf(zlib.compress(HELLO), b"/Filter /FlateDecode /DecodeParms "
                                                                    b"<< /Predictor 15 /Colors 65535 /BitsPerComponent 16 /Columns 65535 >>"),
        "a PNG predictor with 65535 colours of 16 bits")
    add("lzw-bomb", one_page_pdf(lzw_bomb(c.big(1 << 17, 1 << 20)), b"/Filter /LZWDecode"), "an LZW stream of ever longer runs of one byte (ci about 250 MB, full 2 GB)")
    # Nesting. Small files, so not scaled.
    for n in (100_000, 1_000_000):
        add(f"nested-arrays-content-{n}", one_page_pdf(b"BT /F1 12 Tf " + b"[" * n + b"]" * n + b" TJ ET"),
            f"{n} nested arrays in a content stream")
        add(f"nested-arrays-unclosed-content-{n}", one_page_pdf(b"[" * n), f"{n} unclosed arrays in a content stream")
        add(f"nested-arrays-object-{n}", one_page_pdf(HELLO, page_extra=b"/Foo " + b"[" * n + b"]" * n),
            f"{n} nested arrays in the page object")
        add(f"nested-dicts-object-{n}", one_page_pdf(HELLO, page_extra=b"/Foo " + b"<< /A " * n + b"1" + b" >>" * n),
            f"{n} nested dictionaries in the page object")
        add(f"nested-dicts-content-{n}", one_page_pdf(b"/Tag " + b"<< /A " * n + b"1" + b" >>" * n + b" BDC EMC " + HELLO),
            f"{n} nested dictionaries in a marked-content operand")
        add(f"nested-arrays-trailer-{n}", pdf_file([b"<< /Type /Catalog /Pages 2 0 R >>",
                                                    b"<< /Type /Pages /Kids [] /Count 0 >>"],
                                                   trailer_extra=b"/Foo " + b"[" * n + b"]" * n),
            f"{n} nested arrays in the trailer")
        add(f"nested-strings-{n}", one_page_pdf(b"BT /F1 12 Tf 72 700 Td " + b"(" * n + b"x" + b")" * n + b" Tj ET"),
            f"a string with {n} nested parentheses")
    add("q-nesting-1000000", one_page_pdf(b"q " * 1_000_000 + HELLO), "10^6 unbalanced q (graphics state saves)")
    add("bt-nesting-1000000", one_page_pdf(b"BT " * 1_000_000 + HELLO), "10^6 BT without ET")
    # Loops.
    base = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", stream(HELLO)]
    add("xref-prev-self", pdf_file(base, prev="self"), "the xref section's /Prev points to itself")
    add("xref-prev-zero", pdf_file(base, prev=0), "/Prev 0")
    add("xref-prev-huge", pdf_file(base, prev=10 ** 15), "/Prev beyond the file")
    two = pdf_file(base)
    first = two.rfind(b"xref\n")
    second = two + b"xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size 6 /Root 1 0 R /Prev %d >>\n" % first
    second = second.replace(b"trailer\n<< /Size 6 /Root 1 0 R ", b"trailer\n<< /Size 6 /Root 1 0 R /Prev %d " % len(two), 1)
    second += b"startxref\n%d\n%%%%EOF\n" % len(two)
    add("xref-prev-cycle", second, "two xref sections whose /Prev point at each other")
    loop = list(base)
    loop[1] = b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>"
    add("page-tree-cycle", pdf_file(loop), "the page tree holds itself")
    loop2 = list(base)
    loop2[2] = b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 3 0 R >>"
    add("contents-self", pdf_file(loop2), "a page whose /Contents is the page")
    loop3 = list(base)
    loop3.append(b"7 0 R")
    loop3.append(b"6 0 R")
    loop3[2] = b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R >> >> /Contents 6 0 R >>"
    add("reference-cycle", pdf_file(loop3), "object 6 is object 7 is object 6")
    form = list(base)
    form[2] = (b"<< /Type /Page /Parent 2 0 R /Resources << /XObject << /X 6 0 R >> /Font << /F1 4 0 R >> >> "
               b"/Contents 5 0 R >>")
    form[4] = stream(b"/X Do " + HELLO)
    form.append(stream(b"/X Do " + HELLO, b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
                                          b"/Resources << /XObject << /X 6 0 R >> /Font << /F1 4 0 R >> >>"))
    add("form-xobject-self", pdf_file(form), "a form XObject that draws itself")
    # Lying /Length.
    for name, length in [("too-large", b"999999999"), ("too-small", b"3"), ("negative", b"-5"),
                         ("non-numeric", b"(abc)"), ("missing-ref", b"99 0 R"), ("self-ref", b"5 0 R"),
                         ("overflow", b"99999999999999999999999")]:
        add(f"length-{name}", one_page_pdf(HELLO, length=length), f"a content stream with /Length {length.decode()}")
    add("objstm-huge-n", pdf_file(base + [stream(b"1 0", b"/Type /ObjStm /N 2147483647 /First 4")]),
        "an object stream that claims 2^31 objects")
    add("size-huge", pdf_file(base, trailer_extra=b"/Size 2147483647"), "a trailer /Size of 2^31")
    add("xref-count-huge", pdf_file(base).replace(b"xref\n0 6", b"xref\n0 2147483647"), "an xref subsection of 2^31")
    # Real PDFs, truncated and bit-flipped.
    for src_name, data in real_files(c, "pdf"):
        mutate(c, cls, src_name, data, "pdf")


def nested_flate(data, n):
    for _ in range(n):
        data = zlib.compress(data)
    return data


def lzw_bomb(codes):
    """LZW codes (9-bit, as the PDF LZWDecode filter reads them) that repeat one byte in growing runs."""
    out, acc, nbits = bytearray(), 0, 0
    width, next_code, prev = 9, 258, None

    def put(code):
        nonlocal acc, nbits
        acc = (acc << width) | code
        nbits += width
        while nbits >= 8:
            nbits -= 8
            out.append((acc >> nbits) & 0xFF)
        acc &= (1 << nbits) - 1

    put(256)
    put(ord("a"))
    prev = ord("a")
    for _ in range(codes):
        if next_code >= 4093:
            put(256)
            width, next_code = 9, 258
            put(ord("a"))
            continue
        put(next_code)  # the KwKwK case: the previous string plus its first byte
        next_code += 1
        if next_code + 1 >= (1 << width) and width < 12:
            width += 1
    put(257)
    if nbits:
        out.append((acc << (8 - nbits)) & 0xFF)
    return bytes(out)


def gen_xml(c):
    cls = "xml"

    def add(name, data, note, **kw):
        c.add(cls, name + ".xml", data, "xml", note, **kw)

    add("baseline", "<?xml version='1.0'?><doc><p>safe words here</p></doc>", "plain XML (must be ok)", expect="ok")
    # SCALE: 10^6 references (30 MB of text) in ci, 10^7 (300 MB) in full.
    for n in sorted({100_000, c.big(1_000_000, 10_000_000)}):
        ent = "lol " * 8
        add(f"amplify-10x-{n}", f"<?xml version='1.0'?><!DOCTYPE d [<!ENTITY e \"{ent}\">]><d>" + "&e;" * n + "</d>",
            f"{n} references to a 32-byte entity (10x)")
        add(f"amplify-10x-elements-{n // 10}",
            f"<?xml version='1.0'?><!DOCTYPE d [<!ENTITY e \"{ent}\">]><d>" + "<p>&e;</p>" * (n // 10) + "</d>",
            f"{n // 10} paragraphs holding one entity each")
    for levels in (8, 9, 10):
        add(f"billion-laughs-{levels}", billion_laughs("lolz", levels), f"10^{levels - 1} 'lol' through {levels} levels")
    add("billion-laughs-attr", billion_laughs("lolz", 10).replace("<lolz>&l9;</lolz>", '<lolz a="&l9;">x</lolz>'),
        "billion laughs in an attribute value")
    add("quadratic-blowup", "<?xml version='1.0'?><!DOCTYPE d [<!ENTITY a \"" + "x" * 50_000 + "\">]><d>" +
        "&a;" * 50_000 + "</d>", "a 50 KB entity referenced 50,000 times (2.5 GB)")
    add("parameter-laughs", "<?xml version='1.0'?><!DOCTYPE d [<!ENTITY % a \"lol\">" +
        "".join(f"<!ENTITY % a{i} \"" + (f"%a{i - 1};" if i > 1 else "%a;") * 10 + "\">" for i in range(1, 10)) +
        "%a9;]><d>x</d>", "billion laughs through parameter entities")
    add("recursive-entity", "<?xml version='1.0'?><!DOCTYPE d [<!ENTITY a \"&a;\">]><d>&a;</d>", "an entity that names itself")
    add("mutual-recursion", "<?xml version='1.0'?><!DOCTYPE d [<!ENTITY a \"&b;\"><!ENTITY b \"&a;\">]><d>&a;</d>",
        "two entities that name each other")
    add("entity-markup-recursion", "<?xml version='1.0'?><!DOCTYPE d [<!ENTITY a \"<p>&a;</p>\">]><d>&a;</d>",
        "an entity whose markup names itself")
    add("entity-markup-deep", "<?xml version='1.0'?><!DOCTYPE d [<!ENTITY a \"" + "<p>" * 5000 + "x" + "</p>" * 5000 +
        "\">]><d>" + "&a;" * 100 + "</d>", "an entity of 5,000 nested elements, referenced 100 times")
    # External entities: the fingerprint must equal the one of the same document without the entity.
    control = c.path(cls, "xxe-control.xml")
    with open(control, "w") as f:
        f.write("<?xml version='1.0'?><doc><p>safe words here</p></doc>")
    cmp_followup = [{"cmd": ["{bin}", "compare", "{path}", control], "stdout_contains": "distance\t0",
                     "only_if_ok": True}]
    for name, decl, ref in [
        ("xxe-file", '<!ENTITY x SYSTEM "file:///etc/passwd">', "&x;"),
        ("xxe-path", '<!ENTITY x SYSTEM "/etc/passwd">', "&x;"),
        ("xxe-relative", '<!ENTITY x SYSTEM "../../../../../../../../etc/passwd">', "&x;"),
        ("xxe-public", '<!ENTITY x PUBLIC "-//X//EN" "file:///etc/passwd">', "&x;"),
        ("xxe-http", '<!ENTITY x SYSTEM "http://127.0.0.1:9/x">', "&x;"),
        ("xxe-parameter", '<!ENTITY % x SYSTEM "file:///etc/passwd"> %x;', ""),
        ("xxe-dtd", "", ""),
        ("xxe-proc", '<!ENTITY x SYSTEM "file:///proc/self/environ">', "&x;"),
        ("xxe-dev-zero", '<!ENTITY x SYSTEM "file:///dev/zero">', "&x;"),
        ("xxe-dev-stdin", '<!ENTITY x SYSTEM "file:///dev/stdin">', "&x;"),
    ]:
        doctype = f"<!DOCTYPE doc [{decl}]>" if name != "xxe-dtd" else '<!DOCTYPE doc SYSTEM "file:///etc/passwd">'
        add(name, f"<?xml version='1.0'?>{doctype}<doc><p>safe words here {ref}</p></doc>",
            f"an external entity ({name}): never fetched", must_not_contain=[PASSWD_MARK], followup=cmp_followup)
    add("xinclude", "<?xml version='1.0'?><doc xmlns:xi='http://www.w3.org/2001/XInclude'><p>safe words here "
        "<xi:include href='/etc/passwd' parse='text'/></p></doc>", "an XInclude of /etc/passwd: never followed",
        must_not_contain=[PASSWD_MARK], followup=cmp_followup)
    add("xxe-in-attribute", "<?xml version='1.0'?><!DOCTYPE doc [<!ENTITY x SYSTEM 'file:///etc/passwd'>]>"
        "<doc a='&x;'><p>safe words here</p></doc>", "an external entity in an attribute",
        must_not_contain=[PASSWD_MARK])
    for n in (10_000, 100_000, 1_000_000):
        add(f"deep-{n}", "<?xml version='1.0'?>" + "<a>" * n + "x" + "</a>" * n, f"{n} nested elements")
    add("deep-unclosed-1000000", "<?xml version='1.0'?>" + "<a>" * 1_000_000, "10^6 unclosed elements")
    add("deep-jats-100000", "<?xml version='1.0'?><article><body>" + "<sec>" * 100_000 + "x" + "</sec>" * 100_000 +
        "</body></article>", "a JATS body with 10^5 nested sections")
    add("deep-tei-100000", "<?xml version='1.0'?><TEI xmlns='http://www.tei-c.org/ns/1.0'><text>" + "<div>" * 100_000 +
        "x" + "</div>" * 100_000 + "</text></TEI>", "a TEI text with 10^5 nested divs")
    add("deep-docbook-100000", "<?xml version='1.0'?><book xmlns='http://docbook.org/ns/docbook'>" +
        "<section>" * 100_000 + "x" + "</section>" * 100_000 + "</book>", "DocBook with 10^5 nested sections")
    add("attributes-1000000", "<?xml version='1.0'?><d " + " ".join(f"a{i}='v'" for i in range(1_000_000)) + ">x</d>",
        "10^6 attributes on one element")
    add("attributes-duplicate", "<?xml version='1.0'?><d " + "a='v' " * 100_000 + ">x</d>", "one attribute 10^5 times")
    add("namespaces-100000", "<?xml version='1.0'?><d " + " ".join(f"xmlns:n{i}='u{i}'" for i in range(100_000)) +
        "><p>x</p></d>", "10^5 namespace declarations")
    add("entity-decls-1000000", "<?xml version='1.0'?><!DOCTYPE d [" + "".join(f"<!ENTITY e{i} 'v'>" for i in range(1_000_000))
        + "]><d>&e999999;</d>", "10^6 entity declarations")
    add("conditional-sections", "<?xml version='1.0'?><!DOCTYPE d [" + "<![INCLUDE[" * 100_000 + "]]>" * 100_000 +
        "]><d>x</d>", "10^5 nested conditional sections")
    add("doctype-unclosed", "<?xml version='1.0'?><!DOCTYPE d [" + "<!ELEMENT a ANY>" * 100_000, "an unclosed DTD")
    add("attlist-default-amplify", "<?xml version='1.0'?><!DOCTYPE d [<!ATTLIST p a CDATA '" + "x" * 100_000 + "'>]><d>"
        + "<p/>" * 100_000 + "</d>", "a 100 KB default attribute on 10^5 elements")
    add("char-refs-1000000", "<?xml version='1.0'?><d>" + "&#65;&#x42;" * 500_000 + "</d>", "10^6 character references")
    add("pis-1000000", "<?xml version='1.0'?><d>" + "<?p x?>" * 1_000_000 + "</d>", "10^6 processing instructions")
    add("comments-1000000", "<?xml version='1.0'?><d>" + "<!--c-->" * 1_000_000 + "</d>", "10^6 comments")
    add("cdata-8m", "<?xml version='1.0'?><d><![CDATA[" + "x " * (4 << 20) + "]]></d>", "an 8 MiB CDATA section")
    add("name-8m", "<?xml version='1.0'?><" + "n" * (8 << 20) + ">x</" + "n" * (8 << 20) + ">", "an 8 MiB element name")
    add("encoding-lie", b"<?xml version='1.0' encoding='UTF-16'?><d>words</d>", "declares UTF-16, is ASCII")
    add("encoding-unknown", b"<?xml version='1.0' encoding='x-nonsense'?><d>words</d>", "an unknown encoding")
    add("utf16-bom-only", b"\xfe\xff", "a UTF-16BE BOM and nothing else, named .xml")


def gen_text(c):
    cls = "text"
    rng = random.Random(18_005)

    def add(name, data, note, **kw):
        c.add(cls, name, data, "text", note, **kw)

    for name, data in [("utf16be-bom-only", b"\xfe\xff"), ("utf16le-bom-only", b"\xff\xfe"),
                       ("utf8-bom-only", b"\xef\xbb\xbf"), ("utf32le-bom-only", b"\xff\xfe\x00\x00"),
                       ("utf32be-bom-only", b"\x00\x00\xfe\xff"), ("utf16be-bom-odd", b"\xfe\xff\x00"),
                       ("utf16le-bom-odd", b"\xff\xfe\x41"), ("utf16be-lone-surrogate", b"\xfe\xff\xd8\x00"),
                       ("utf16le-lone-surrogate", b"\xff\xfe\x00\xd8"),
                       ("utf16be-bom-twice", b"\xfe\xff\xfe\xff"), ("utf8-bom-twice", b"\xef\xbb\xbf" * 2),
                       ("utf16be-bom-nul", b"\xfe\xff\x00\x00"), ("empty", b"")]:
        add(name + ".txt", data, f"a text file that is {name.replace('-', ' ')}")
        add(name + ".bin", data, f"{name.replace('-', ' ')}, with no telling extension")
    c.add(cls, "utf16be-bom-only.html", b"\xfe\xff", "html", "a UTF-16BE BOM alone, named .html")
    c.add(cls, "utf16le-bom-only.htm", b"\xff\xfe", "html", "a UTF-16LE BOM alone, named .htm")
    add("invalid-utf8.txt", b"good words " * 100 + b"\xff\xfe\xc0\xaf\xed\xa0\x80 more words", "invalid UTF-8 bytes")
    add("invalid-utf8-every-other.txt", b"\xffa" * 100_000, "an invalid byte before every letter")
    add("overlong.txt", b"\xc0\xaf\xe0\x80\xaf\xf0\x80\x80\xaf" * 10_000, "overlong UTF-8 forms")
    add("nul-bytes.txt", b"words\x00" * 10_000, "NUL after every word")
    add("nul-only.txt", b"\x00" * 1_000_000, "10^6 NUL bytes")
    add("utf16le-no-bom.txt", ("near duplicate words " * 1000).encode("utf-16-le"), "UTF-16LE without a BOM",
        expect="ok")
    # SCALE: U+FDFA (NFKC: 18 characters) ci 4 MB and 16 MB, full 200 MB (issue 18: 2.6 GB of memory).
    for mb in sorted({4, c.big(16, 200)}):
        add(f"nfkc-fdfa-{mb}m.txt", ("\ufdfa" * ((mb << 20) // 3)).encode(), f"{mb} MB of U+FDFA (NFKC 18x)")
    add("nfkc-fdfa-spaced-4m.txt", ("\ufdfa " * ((4 << 20) // 4)).encode(), "4 MB of U+FDFA, space-separated")
    add("nfkc-ligature-4m.txt", ("\ufb03" * ((4 << 20) // 3)).encode(), "4 MB of U+FB03 (ffi)")
    add("nfkc-squared-4m.txt", ("\u3392\u33af" * ((4 << 20) // 6)).encode(), "4 MB of squared CJK abbreviations")
    add("casefold-expand-4m.txt", ("\u0390\u00df\ufb00" * ((4 << 20) // 7)).encode(), "4 MB of case-folding expansions")
    # SCALE: one line without spaces, ci 8 MB, full 50 MB.
    mb = c.big(8, 50)
    add(f"one-line-{mb}m.txt", b"a" * (mb << 20), f"one {mb} MB word")
    add(f"one-line-cjk-{mb}m.txt", ("\u4e00" * ((mb << 20) // 3)).encode(), f"one {mb} MB line of Han (a word each)")
    add(f"one-line-url-{mb}m.txt", b"http://" + b"a" * (mb << 20), f"one {mb} MB URL")
    add("combining-alternating-200k.txt", ("a" + "\u0301\u0316" * 100_000).encode(),
        "one letter with 200,000 combining marks of alternating classes (canonical reordering)")
    add("combining-descending-200k.txt", ("a" + "\u0301" * 100_000 + "\u0316" * 100_000).encode(),
        "200,000 combining marks in descending class order")
    add("cf-only-1m.txt", ("\u200b\u200d\ufeff" * 350_000).encode(), "10^6 format characters and nothing else")
    add("hangul-jamo-1m.txt", ("\u1100\u1161\u11a8" * 350_000).encode(), "10^6 conjoining jamo (composition)")
    add("lines-1m.txt", b"\n" * 1_000_000, "10^6 empty lines")
    add("cr-only-1m.txt", b"word\r" * 200_000, "200,000 words separated by bare CR")
    add("random-bytes-1m.bin", bytes(rng.randrange(256) for _ in range(1 << 20)), "1 MiB of random bytes")
    add("shift-jis-lookalike.txt", bytes(rng.choice([0x81, 0x82, 0x83, 0x40, 0x9f]) for _ in range(1 << 20)),
        "1 MiB of bytes that look like Shift-JIS (detection)")
    add("gzip-not-warc.gz", gzip.compress(b"plain words " * 1000, mtime=0), "a gzip file that is not a WARC")
    add("zip-not-epub.zip", zip_bytes([("a.txt", "words")]), "a zip that is not an EPUB")
    c.add(cls, "pdf-magic-only.pdf", b"%PDF-", "pdf", "the PDF magic and nothing else")


def real_files(c, medium):
    """(name, bytes) of real files of one medium: the golden-vector inputs, then a few crossmedia files."""
    exts = {"html": (".html", ".htm"), "xml": (".xml",), "pdf": (".pdf",), "epub": (".epub",),
            "text": (".txt",), "warc": (".warc.gz", ".warc")}[medium]
    out = []
    if os.path.isdir(VECTORS):
        names = sorted(n for n in os.listdir(VECTORS) if n.endswith(exts))
        if medium == "text":
            names = [n for n in names if n in ("utf16be-bom.txt", "shift-jis.txt", "japanese.txt", "arabic.txt")]
        for n in names:
            with open(os.path.join(VECTORS, n), "rb") as f:
                out.append(("v-" + n, f.read()))
    out.extend(crossmedia(c).get(medium, []))
    return out


_CROSSMEDIA = None


def crossmedia(c):
    """A deterministic handful of files per medium from the shared evaluation set's crossmedia archive."""
    global _CROSSMEDIA
    if _CROSSMEDIA is not None:
        return _CROSSMEDIA
    _CROSSMEDIA = {}
    if not os.path.exists(CROSSMEDIA) or shutil.which("zstd") is None:
        print(f"generate.py: {CROSSMEDIA} or zstd missing: no crossmedia files (fewer mutations)", file=sys.stderr)
        return _CROSSMEDIA
    want = {"html": (4, 100_000), "xml": (3, 60_000), "pdf": (3, 400_000), "epub": (2, 200_000), "text": (1, 200_000)}
    ext_of = {".html": "html", ".xml": "xml", ".pdf": "pdf", ".epub": "epub", ".txt": "text"}
    cands = {m: [] for m in want}
    proc = subprocess.Popen(["zstd", "-dc", CROSSMEDIA], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        for m in tar:
            if not m.isfile():
                continue
            medium = ext_of.get(os.path.splitext(m.name)[1])
            if medium is None or m.size > want[medium][1] or m.size < 2000:
                continue
            cands[medium].append((m.name, tar.extractfile(m).read()))
    proc.wait()
    for medium, (count, _) in want.items():
        items = sorted(cands[medium])
        rng = random.Random(18_100 + len(medium))
        seen_sizes, picked = set(), []
        for name, data in rng.sample(items, min(len(items), count * 4)):
            if len(data) in seen_sizes:
                continue
            seen_sizes.add(len(data))
            picked.append(("x-" + name.replace("files/", "").replace("/", "_"), data))
            if len(picked) == count:
                break
        _CROSSMEDIA[medium] = sorted(picked)
    return _CROSSMEDIA


def mutate(c, cls, src_name, data, medium, cmd=None, suffix=None):
    """Truncations and bit flips of one real file: 12 variants."""
    rng = random.Random(zlib.crc32(src_name.encode()))
    stem, ext = split_ext(src_name)
    ext = suffix or ext
    n = len(data)
    cuts = sorted({1, max(1, n // 100), n // 10, n // 3, n // 2, (9 * n) // 10, n - 1})
    for cut in cuts:
        c.add(cls, f"{stem}.cut{cut}{ext}", data[:cut], medium, f"{src_name} cut to {cut} of {n} bytes", cmd=cmd)
    for seed, flips in enumerate((1, 4, 16, 64)):
        b = bytearray(data)
        for _ in range(flips):
            i = rng.randrange(n)
            b[i] ^= 1 << rng.randrange(8)
        c.add(cls, f"{stem}.flip{flips}{ext}", bytes(b), medium, f"{src_name} with {flips} bit(s) flipped", cmd=cmd)
    b = bytearray(data)
    at = rng.randrange(max(1, n - 64))
    b[at:at + 64] = bytes(len(b[at:at + 64]))
    c.add(cls, f"{stem}.zero64{ext}", bytes(b), medium, f"{src_name} with 64 bytes zeroed at {at}", cmd=cmd)


def split_ext(name):
    for ext in (".warc.gz", ".jsonl.gz"):
        if name.endswith(ext):
            return name[: -len(ext)], ext
    stem, ext = os.path.splitext(name)
    return stem, ext


def gen_mutated(c):
    cls = "mutated"
    rng = random.Random(18_006)
    for medium in ("html", "xml", "epub", "warc", "text"):
        for name, data in real_files(c, medium):
            mutate(c, cls, name, data, medium)
    # A WARC made of real pages, plain and gzipped per record, and a gzipped JSONL of real text.
    pages = [d for _, d in real_files(c, "html")][:6]
    records = [warc_record(http(p), uri=f"http://example.org/{i}", n=i) for i, p in enumerate(pages)]
    mutate(c, cls, "s-pages.warc", b"".join(records), "warc")
    mutate(c, cls, "s-pages.warc.gz", b"".join(gzip.compress(r, mtime=0) for r in records), "warc")
    texts = [d for _, d in real_files(c, "text")] + pages
    lines = b"".join(json.dumps({"id": f"doc{i}", "text": t.decode("utf-8", "replace")}).encode() + b"\n"
                     for i, t in enumerate(texts))
    mutate(c, cls, "s-docs.jsonl.gz", gzip.compress(lines, mtime=0), "jsonl",
           cmd=["{bin}", "hash", "--jsonl", "{path}"])
    mutate(c, cls, "s-docs.jsonl", lines, "jsonl", cmd=["{bin}", "hash", "--jsonl", "{path}"])
    del rng


def gen_fs(c):
    cls = "fs"
    root = c.path(cls, "")
    text = b"plain words for a file system case\n"

    def mkdir(name):
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        return d

    def write(path, data=text):
        with open(path, "wb") as f:
            f.write(data)

    def symlink(target, path):
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)

    def fifo(path):
        if os.path.lexists(path):
            os.remove(path)
        os.mkfifo(path)

    fifo(os.path.join(root, "fifo"))
    c.entry(cls, "fifo", "fs", "a FIFO without a writer named on the command line: no hang, and a word about it",
            stderr_mentions=["fifo"])
    symlink("fifo", os.path.join(root, "link-to-fifo"))
    c.entry(cls, "link-to-fifo", "fs", "a symlink to a FIFO without a writer", stderr_mentions=["link-to-fifo"])
    c.entry(cls, "fifo", "fs", "a FIFO without a writer given to dedup", cmd=["{bin}", "dedup", "{path}"],
            stderr_mentions=["fifo"])
    c.entry(cls, "fifo", "fs", "a FIFO without a writer given to compare", cmd=["{bin}", "compare", "{path}", "{path}"],
            exit_codes=[2])
    # A FIFO with a producer (`producer > fifo & neardup hash fifo`, or process substitution): it is read.
    feed = "words that arrive through a named pipe from a producer process\n"
    fifo(os.path.join(root, "fed-fifo"))
    c.entry(cls, "fed-fifo", "fs", "a FIFO with a producer writing into it: read like a file", expect="ok",
            stdout_lines=1, fifo_feed=feed)
    # A FIFO of its own: entries run at once (`run.py --jobs`), and two producers on one FIFO would feed each
    # other's reader.
    fifo(os.path.join(root, "fed-fifo-behind-link"))
    symlink("fed-fifo-behind-link", os.path.join(root, "link-to-fed-fifo"))
    c.entry(cls, "link-to-fed-fifo", "fs", "a symlink to a FIFO with a producer: read like a file", expect="ok",
            stdout_lines=1, fifo_feed=feed)
    d = mkdir("dir-with-fifo")
    write(os.path.join(d, "a.txt"))
    fifo(os.path.join(d, "pipe"))
    c.entry(cls, "dir-with-fifo", "fs", "a directory holding a file and a FIFO: the FIFO is reported",
            stderr_mentions=["pipe"])
    d = mkdir("dir-with-fifo-link")
    write(os.path.join(d, "a.txt"))
    symlink("../fifo", os.path.join(d, "to-fifo"))
    c.entry(cls, "dir-with-fifo-link", "fs", "a directory holding a link to a FIFO, walked with -L",
            cmd=["{bin}", "hash", "-L", "{path}"], stderr_mentions=["to-fifo"])
    symlink("does-not-exist", os.path.join(root, "dangling"))
    c.entry(cls, "dangling", "fs", "a dangling link named on the command line", expect="refused")
    d = mkdir("dir-with-dangling")
    write(os.path.join(d, "a.txt"))
    symlink("nowhere", os.path.join(d, "dangling"))
    c.entry(cls, "dir-with-dangling", "fs", "a directory holding a dangling link, walked with -L: reported",
            cmd=["{bin}", "hash", "-L", "{path}"], stderr_mentions=["dangling"])
    c.entry(cls, "dir-with-dangling", "fs", "a directory holding a dangling link, walked without -L")
    d = mkdir("dir-with-loop")
    write(os.path.join(d, "a.txt"))
    symlink(".", os.path.join(d, "self"))
    symlink("loop-b", os.path.join(d, "loop-a"))
    symlink("loop-a", os.path.join(d, "loop-b"))
    c.entry(cls, "dir-with-loop", "fs", "a directory with a link to itself and a two-link loop, walked with -L: "
            "the loops are reported", cmd=["{bin}", "hash", "-L", "{path}"], stderr_mentions=["loop-a"])
    c.entry(cls, "dir-with-loop", "fs", "the same, walked without -L")
    symlink("loop-d", os.path.join(root, "loop-c"))
    symlink("loop-c", os.path.join(root, "loop-d"))
    c.entry(cls, "loop-c", "fs", "a symlink loop named on the command line", expect="refused")
    d = mkdir("newline-name")
    write(os.path.join(d, "a\nb.txt"))
    c.entry(cls, "newline-name", "fs", "a file whose name holds a newline: one escaped output line", expect="ok",
            stdout_lines=1)
    c.entry(cls, "newline-name/a\nb.txt", "fs", "the same file named on the command line", expect="ok", stdout_lines=1)
    d = mkdir("invalid-utf8-names")
    for b in (b"\xff", b"\xfe"):
        write(os.path.join(os.fsencode(d), b"name-" + b + b".txt"))
    c.entry(cls, "invalid-utf8-names", "fs", "two files whose names differ only in an invalid UTF-8 byte, same "
            "content: two documents, two distinct lines", expect="ok", stdout_lines=2, distinct_stdout_lines=2)
    c.entry(cls, "invalid-utf8-names", "fs", "the same two files deduplicated: one pair of two different ids",
            cmd=["{bin}", "dedup", "--pairs", "{path}"], expect="ok", stdout_lines=1)
    c.entry(cls, os.fsdecode(b"invalid-utf8-names/name-\xff.txt"), "fs",
            "a name that is not UTF-8, named on the command line", expect="ok", stdout_lines=1)
    c.entry(cls, "invalid-utf8-names", "fs", "the same two files added to an index: two entries",
            cmd=["{bin}", "index", "add", "{tmp}/idx", "{path}"], expect="ok",
            setup=[["{bin}", "index", "create", "{tmp}/idx"]],
            followup=[{"cmd": ["{bin}", "index", "stats", "{tmp}/idx"], "stdout_contains": "entries\t2"}])
    write(os.path.join(root, "empty.txt"), b"")
    c.entry(cls, "empty.txt", "fs", "an empty file: a warning, exit 0 (documented)", expect="ok")
    c.entry(cls, "empty.txt", "fs", "an empty file with --strict: refused", cmd=["{bin}", "hash", "--strict", "{path}"],
            expect="refused")
    d = mkdir("empty-dir")
    c.entry(cls, "empty-dir", "fs", "an empty directory")
    d = mkdir("unreadable")
    write(os.path.join(d, "secret.txt"))
    os.chmod(os.path.join(d, "secret.txt"), 0)
    c.entry(cls, "unreadable/secret.txt", "fs", "a file without read permission (readable as root)")
    c.entry(cls, "no-such-file.txt", "fs", "a path that does not exist", expect="refused")
    d = mkdir("deep-dirs")
    p = d
    for i in range(200):
        p = os.path.join(p, "d")
    os.makedirs(p, exist_ok=True)
    write(os.path.join(p, "a.txt"))
    c.entry(cls, "deep-dirs", "fs", "a file 200 directories down", expect="ok", stdout_lines=1)
    d = mkdir("many-files")
    for i in range(5000):
        write(os.path.join(d, f"f{i:05d}.txt"), b"file number %d words\n" % i)
    c.entry(cls, "many-files", "fs", "5,000 small files", expect="ok", stdout_lines=5000)
    c.entry(cls, "dev-zero", "fs", "/dev/zero named on the command line: refused, never read to the end",
            cmd=["{bin}", "hash", "/dev/zero"], expect="refused", names=["/dev/zero"])
    c.entry(cls, "dev-stdin", "fs", "'-' with stdin from /dev/null", cmd=["{bin}", "hash", "-"])


def gen_jsonl(c):
    cls = "jsonl"

    def add(name, data, note, both=True, **kw):
        c.add(cls, name, data, "jsonl", note, cmd=["{bin}", "hash", "--jsonl", "{path}"], **kw)
        if both:
            kw2 = {k: v for k, v in kw.items() if k not in ("stdout_lines", "stdout_contains", "distinct_stdout_lines")}
            c.entry(cls, name, "jsonl", note + " (dedup)", cmd=["{bin}", "dedup", "--jsonl", "{path}"], **kw2)

    t = "near duplicate words in a record"
    big = "1" * 30
    add("id-30-digits.jsonl", f'{{"id":{big},"text":"{t}"}}\n{{"id":2,"text":"other words entirely"}}\n',
        "a 30-digit numeric id: kept as written (or refused), never output as a float", stdout_contains=[big],
        stdout_must_not_contain=["e+29", "e29", "1.1111111111111111"])
    add("id-string-and-number.jsonl", f'{{"id":"1","text":"{t}"}}\n{{"id":1,"text":"other words entirely"}}\n',
        '"1" and 1 as ids: two different ids, or a refusal that says so')
    add("id-float.jsonl", f'{{"id":1.0,"text":"{t}"}}\n{{"id":1,"text":"other words"}}\n', "1.0 and 1 as ids")
    add("id-object.jsonl", f'{{"id":{{"a":1}},"text":"{t}"}}\n', "an object as id")
    add("id-null.jsonl", f'{{"id":null,"text":"{t}"}}\n', "null as id")
    add("no-text.jsonl", f'{{"id":"a","text":"{t}"}}\n{{"id":"b","text":"{t} too"}}\n{{"id":"c","body":"x"}}\n',
        'line 3 has no "text": the error names the file and the line', expect="refused",
        stderr_regex=r"(:3\b|line 3\b)")
    add("id-only.jsonl", '{"id":5}\n', '{"id":5} alone: the error is about "text", not "id"', expect="refused",
        must_not_contain=['no "id"'])
    add("text-not-string.jsonl", '{"id":"a","text":5}\n{"id":"b","text":["x"]}\n', "text fields that are not strings",
        expect="refused")
    add("bom-line1.jsonl", "\ufeff" + f'{{"id":"a","text":"{t}"}}\n{{"id":"b","text":"{t}"}}\n',
        "a UTF-8 BOM before line 1: skipped, or a refusal that says BOM",
        must_not_contain=["expected value at line 1 column 1"])
    add("invalid-utf8-mid.jsonl", f'{{"id":"a","text":"{t}"}}\n'.encode() + b'{"id":"b","text":"bad \xff byte"}\n' +
        f'{{"id":"c","text":"{t}"}}\n'.encode(), "invalid UTF-8 on line 2 of 3")
    # SCALE: one line of 8 MB in ci, 100 MB in full.
    mb = c.big(8, 100)
    add(f"line-{mb}m.jsonl", b'{"id":"big","text":"' + b"word " * ((mb << 20) // 5) + b'"}\n', f"one {mb} MB line")
    add("deep-json-1000000.jsonl", "[" * 1_000_000 + "\n", "10^6 nested JSON arrays")
    add("deep-json-text.jsonl", '{"id":"a","text":' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}\n",
        "a text field of 10^5 nested objects")
    add("not-json.jsonl", "this is not json\n", "a line that is not JSON", expect="refused")
    add("empty-lines.jsonl", "\n" * 100_000, "10^5 empty lines")
    add("duplicate-ids.jsonl", f'{{"id":"a","text":"{t}"}}\n' * 3, "the same id three times")
    add("nul-in-text.jsonl", f'{{"id":"a","text":"a\\u0000b {t}"}}\n', "an escaped NUL in the text", expect="ok")
    add("lone-surrogate.jsonl", f'{{"id":"a","text":"\\ud800 {t}"}}\n', "an escaped lone surrogate")
    add("many-records-100000.jsonl", "".join(f'{{"id":{i},"text":"record {i} words"}}\n' for i in range(100_000)),
        "10^5 small records", expect="ok", both=False, stdout_lines=100_000)


def gen_index(c):
    cls = "index"
    fps = ["simhash-doc-v1:t4fbfqjd2bycm", "simhash-doc-v1:qfuqxa4cybeau", "simhash-doc-v1:bmdykraqebdkw",
           "simhash-doc-v1:qikqezyce3ajc", "simhash-doc-v1:q4lwe5tc27gjc", "simhash-doc-v1:t4fbfqjd2bycm"]
    good = lambda i: f"doc-{i}\t{fps[i % len(fps)]}\n".encode()
    create = [["{bin}", "index", "create", "{tmp}/idx"]]
    stats = lambda n: [{"cmd": ["{bin}", "index", "stats", "{tmp}/idx"], "stdout_contains": f"entries\t{n}"}]
    add = lambda name, data, note, n, **kw: c.add(
        cls, name, data, "index", note, cmd=["{bin}", "index", "add-fingerprints", "{tmp}/idx", "{path}"],
        setup=create, followup=stats(n), **kw)
    add("invalid-utf8-middle.tsv", b"".join(good(i) for i in range(3)) + b"bad-\xff-id\t" + fps[0].encode() + b"\n" +
        b"".join(good(i) for i in range(3, 6)), "an invalid UTF-8 line among six good ones: the six are stored "
        "(the bad line is reported with the file and line)", 6, stderr_mentions=["invalid-utf8-middle.tsv"])
    add("invalid-utf8-first.tsv", b"\xff\xfe\n" + b"".join(good(i) for i in range(4)), "an invalid first line", 4)
    add("garbage-lines.tsv", b"".join(good(i) for i in range(2)) + b"no tab here\n\tonly-tab\nid\tnot-a-fp\n" +
        b"".join(good(i) for i in range(2, 4)), "garbage lines among good ones", 4)
    add("nul-line.tsv", good(0) + b"\x00" * 1000 + b"\n" + good(1), "a line of NUL bytes", 2)
    add("huge-line.tsv", good(0) + b"x" * (8 << 20) + b"\n" + good(1), "an 8 MiB line", 2)
    add("crlf.tsv", b"".join(good(i).replace(b"\n", b"\r\n") for i in range(3)), "CRLF line ends", 3)
    add("good-1000.tsv", b"".join(good(i) for i in range(1000)), "1,000 good lines", 1000, expect="ok")


def gen_params(c):
    cls = "params"
    os.makedirs(c.path(cls, ""), exist_ok=True)
    doc = c.path(cls, "doc.txt")
    with open(doc, "w") as f:
        f.write("plain words for parameter checks\n")

    def add(name, cmd, note, mention, expect="refused", **kw):
        kw.setdefault("exit_codes", [2])
        c.entry(cls, "doc.txt", "params", note, cmd=cmd, expect=expect, names=[mention], **kw)
        c.entries[-1]["id"] = f"{cls}/{name}"

    add("num-perm-1e8", ["{bin}", "index", "create", "{tmp}/idx", "--scheme", "minhash", "--num-perm", "100000000"],
        "index create --num-perm 10^8: refused at once (or quick)", "num-perm", expect="either")
    add("num-perm-1e8-hash", ["{bin}", "hash", "--scheme", "minhash", "--num-perm", "100000000", "{path}"],
        "hash --num-perm 10^8", "num-perm", expect="either")
    add("num-perm-0", ["{bin}", "hash", "--scheme", "minhash", "--num-perm", "0", "{path}"], "--num-perm 0", "num-perm")
    for t in ("NaN", "1.5", "-0.1", "inf"):
        add(f"threshold-{t}-create", ["{bin}", "index", "create", "{tmp}/idx", "--scheme", "minhash", f"--threshold={t}"],
            f"index create --threshold {t}", "threshold")
        add(f"threshold-{t}-dedup", ["{bin}", "dedup", "--scheme", "minhash", f"--threshold={t}", "{path}", "{path}"],
            f"dedup --threshold {t}", "threshold")
    add("k-1000-create", ["{bin}", "index", "create", "{tmp}/idx", "-k", "1000"], "index create -k 1000", "k")
    add("k-1000-dedup", ["{bin}", "dedup", "-k", "1000", "{path}"], "dedup -k 1000", "k")
    add("k-1000-compare", ["{bin}", "compare", "--exit-code", "-k", "1000", "{path}", "{path}"],
        "compare -k 1000", "k", expect="either")
    add("n-huge", ["{bin}", "index", "create", "{tmp}/idx", "-n", "1e300"], "index create -n 1e300", "n",
        expect="either")
    add("n-nan", ["{bin}", "index", "create", "{tmp}/idx", "-n", "NaN"], "index create -n NaN", "n")
    add("shingle-huge", ["{bin}", "hash", "--scheme", "minhash", "--shingle", "1000000000", "{path}"],
        "--shingle 10^9", "shingle", expect="either")
    add("max-bytes-0", ["{bin}", "hash", "--max-bytes", "0", "{path}"], "--max-bytes 0", "max-bytes")
    add("max-bytes-1", ["{bin}", "hash", "--max-bytes", "1", "{path}"], "--max-bytes 1: the file is refused",
        "doc.txt", exit_codes=[1])
    add("plan-huge", ["{bin}", "plan", "-n", "1e300", "-k", "7"], "plan -n 1e300", "n", expect="either")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--scale", choices=("ci", "full"), default="ci")
    args = ap.parse_args()
    if os.path.exists(args.outdir):
        # Clear a previous corpus (files made unreadable included).
        for dirpath, dirnames, filenames in os.walk(args.outdir):
            for n in filenames:
                p = os.path.join(dirpath, n)
                if not os.path.islink(p):
                    try:
                        os.chmod(p, 0o644)
                    except OSError:
                        pass
        shutil.rmtree(args.outdir)
    os.makedirs(args.outdir)
    c = Corpus(args.outdir, args.scale)
    for gen in (gen_html, gen_epub, gen_warc, gen_pdf, gen_xml, gen_text, gen_mutated, gen_fs, gen_jsonl, gen_index,
                gen_params):
        gen(c)
    c.write_manifest()
    counts = {}
    for e in c.entries:
        counts[e["class"]] = counts.get(e["class"], 0) + 1
    print(f"{len(c.entries)} inputs in {args.outdir} ({args.scale}): " +
          ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
