#!/usr/bin/env python3
"""Writes the malformed-input corpus: small files that are broken or hostile in one way each.

Every file must make `neardup hash FILE` exit non-zero with an error that names the file, without a panic or a
hang (crates/neardup-cli/tests/malformed.rs). The files are committed; this script documents how each was made.
"""
import gzip
import io
import os
import zipfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = []


def write(name, data, why):
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    FILES.append((name, why))


# PDF
write("pdf-truncated.pdf", b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pa",
      "a PDF cut off inside its second object")
write("pdf-xref-loop.pdf",
      b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 1 0 R >>\nendobj\nxref\n0 2\n0000000000 65535 f \n"
      b"0000000009 00000 n \ntrailer\n<< /Size 2 /Root 1 0 R /Prev 58 >>\nstartxref\n58\n%%EOF\n",
      "a PDF whose page tree is its own catalog and whose xref section points to itself")
write("pdf-garbage.pdf", b"%PDF-1.4\n" + bytes(range(256)) * 8, "a PDF header followed by binary garbage")
write("pdf-bad-encrypt.pdf",
      b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\n"
      b"endobj\n3 0 obj\n<< /Filter /Standard /V 9 /R 9 /O (x) /U (y) /P -4 >>\nendobj\n"
      b"trailer\n<< /Size 4 /Root 1 0 R /Encrypt 3 0 R >>\n%%EOF\n",
      "an encrypted PDF with an unknown security handler revision")

# XML
write("xml-mismatched.xml", "<?xml version='1.0'?><a><b>text</a></b>", "mismatched end tags")
write("xml-unclosed.xml", "<?xml version='1.0'?><article><body><p>never closed", "ends inside open elements")
lol = ["<?xml version='1.0'?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n"]
for i in range(1, 10):
    prev = "lol" if i == 1 else f"lol{i - 1}"
    lol.append(f" <!ENTITY lol{i} \"" + f"&{prev};" * 10 + "\">\n")
lol.append("]>\n<lolz>&lol9;</lolz>\n")
write("xml-billion-laughs.xml", "".join(lol), "exponential entity expansion (10^9 'lol')")
write("xml-deep.xml", "<?xml version='1.0'?>" + "<a>" * 20_000 + "x" + "</a>" * 20_000,
      "20,000 nested elements, over the depth limit")
write("xml-bad-char-ref.xml", "<?xml version='1.0'?><a>&#xFFFFFFFF;</a>", "a character reference out of range")
write("xml-external-entity.xml",
      "<?xml version='1.0'?><!DOCTYPE a [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><a>&xxe;</a>",
      "an external entity (never fetched): no text is left, so no tokens")

# HTML
write("html-deep.html", "<!DOCTYPE html><body>" + "<div>" * 20_000 + "deep" + "</div>" * 20_000,
      "20,000 nested div elements, over the depth limit")
write("html-binary.html", b"<html><body>\x00\x01\x02\x03 binary\x00</body></html>", "NUL bytes in an HTML file")


# EPUB
def zip_bytes(entries, first_mimetype=True):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        if first_mimetype:
            z.writestr(zipfile.ZipInfo("mimetype", (2026, 1, 1, 0, 0, 0)), "application/epub+zip",
                       compress_type=zipfile.ZIP_STORED)
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


CONTAINER = ('<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
             '<rootfile full-path="content.opf"/></rootfiles></container>')
OPF = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf"><manifest>'
       '<item id="c" href="c.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="c"/></spine>'
       '</package>')
write("epub-not-a-zip.epub", b"PK\x03\x04" + b"\x00" * 64, "zip magic bytes and nothing else")
write("epub-no-container.epub", zip_bytes([("content.opf", OPF)]), "no META-INF/container.xml")
write("epub-missing-chapter.epub", zip_bytes([("META-INF/container.xml", CONTAINER), ("content.opf", OPF)]),
      "the spine names a file that is not in the archive")
write("epub-zip-bomb.epub",
      zip_bytes([("META-INF/container.xml", CONTAINER), ("content.opf", OPF),
                 ("c.xhtml", b"<html><body><p>" + b" " * (64 << 20) + b"</p></body></html>")]),
      "a chapter that inflates to 64 MiB from a file of about 70 KB")
write("epub-truncated.epub",
      zip_bytes([("META-INF/container.xml", CONTAINER), ("content.opf", OPF), ("c.xhtml", "<p>x</p>" * 500)])[:600],
      "an EPUB cut off in the middle (no central directory)")


# WARC
def record(uri, http):
    return (f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n").encode() \
        + http + b"\r\n\r\n"


write("warc-truncated.warc",
      record("http://example.org/a", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>complete record</p>")
      + record("http://example.org/b", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>cut off</p>")[:-30],
      "the second record is cut off: the first is read, the damage is reported")
write("warc-bad-length.warc", b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: lots\r\n\r\nbody",
      "a Content-Length that is not a number")
write("warc-bad-chunks.warc",
      record("http://example.org/c",
             b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbody\r\n"),
      "a chunked body with a bad chunk size")
write("warc-corrupt.warc.gz", gzip.compress(record("http://example.org/d", b"HTTP/1.1 200 OK\r\n\r\nx"), mtime=0)[:40]
      + b"\x00garbage", "gzip data that breaks off")
bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
write("warc-gzip-bomb.warc.gz",
      bomb.compress(b"WARC/1.1\r\n") + bomb.compress(b"\x00" * (64 << 20)) + bomb.flush(),
      "gzip that inflates to 64 MiB from about 65 KB")

# Committed as found, not generated: the pdf fuzz target's first crash (1.2 KB).
FILES.append(("pdf-extractor-panic.pdf",
              "found by the pdf fuzz target: pdf_oxide 0.3.78 panics on it (slices a string inside a UTF-8 "
              "character); neardup catches the panic and reports it"))

with open(os.path.join(HERE, "README.md"), "w", encoding="utf-8") as f:
    f.write("# Malformed and hostile inputs\n\nGenerated by `make_malformed.py`. Every file must give a clear error "
            "naming it, never a panic or a hang (`crates/neardup-cli/tests/malformed.rs` runs the real binary over "
            "each).\n\n| file | what is wrong |\n|---|---|\n")
    for name, why in FILES:
        f.write(f"| `{name}` | {why} |\n")
print(f"{len(FILES)} files")
