#!/usr/bin/env python3
"""Writes the input files of the simhash-doc-v1 golden vectors (inputs/) and the case list (cases.tsv).

The inputs are committed; this script documents how each was made (encodings, invisible characters) and can
rewrite them. The expected outputs are rendered by `cargo run -p neardup --example make-vectors` and checked
independently by tools/reference/simhash_doc_v1.py.
"""
import os
import random
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []


def case(name, filename, description, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(HERE, "inputs", filename), "wb") as f:
        f.write(data)
    CASES.append((name, "inputs/" + filename, description))


case("empty", "empty.txt", "An empty file has no tokens, hence no fingerprint.", b"")
case("numbers-only", "numbers-only.txt", "Numbers and punctuation only: every token lacks a letter.",
     "2019 3.14 42 1,000,000 — 7% (12) #3 ٣٤٥ ４２\n")
case("english-spec-example", "english-spec-example.txt", "The spec's first example: case, punctuation, digits.",
     "Hello, WORLD! 2019 covid19 don't\n")
case("english-paragraph", "english-paragraph.txt", "Ordinary English prose with capitals and punctuation.",
     "The quick brown fox jumps over the lazy dog. It was the best of times, it was the worst of times;\n"
     "it was the age of wisdom, it was the age of foolishness. Mr. Smith's O'Brien-style \"quotes\" (and "
     "brackets) end here.\n")
LATIN = "Café naïve résumé Ångström Zürich façade Øresund Łódź Señor coöperate\n"
case("latin-precomposed", "latin-precomposed.txt", "Latin with diacritics, precomposed (NFC).",
     unicodedata.normalize("NFC", LATIN))
case("latin-decomposed", "latin-decomposed.txt",
     "The same Latin text decomposed (NFD): NFKC recomposes it, so tokens and fingerprint equal the NFC case.",
     unicodedata.normalize("NFD", LATIN))
case("german-sharp-s", "german-sharp-s.txt", "Full case folding: ß and ẞ fold to ss.",
     "Straße STRASSE straße GROẞE Maß Fußball\n")
case("turkish-dotted-i", "turkish-dotted-i.txt",
     "İ folds to i + U+0307 (full, non-Turkic folding); dotless ı stays.", "İstanbul ISTANBUL ıstanbul Iğdır\n")
case("greek-final-sigma", "greek-final-sigma.txt", "Σ, σ and final ς all fold to σ; tonos survives folding.",
     "ΟΔΥΣΣΕΥΣ Οδυσσεύς σοφός ΣΟΦΟΣ λόγος\n")
case("ligatures-compat", "ligatures-compat.txt",
     "NFKC expands compatibility ligatures and forms (ﬁ, ﬂ, ﬃ, ĳ, ℌ, ²); œ and æ are letters and stay.",
     "ﬁnd ﬂow ﬃx ĳs ℌilbert x² œuvre Æsir ｶﾀｶﾅ\n")
case("format-characters", "format-characters.txt",
     "Cf characters are deleted before anything else: soft hyphen, zero-width space/joiner, BOM, LRM.",
     "co\u00adoperate zero\u200bwidth joi\u200dner \ufeffbom mid\u200edle\u2060word\n")
case("identifiers", "identifiers.txt",
     "Chunks with ://, starting with www., e-mail-like, or DOIs are dropped whole; near misses are kept.",
     "see https://x.org/a or a@b.c www.Example.com doi:10.1000/182 10.1038/nature12373 HTTP://X.Y\n"
     "kept: user@host 10.123/short 10.1234x/y wwwx.org mailto:nobody\n")
case("chinese", "chinese.txt", "Han characters are tokens on their own; full-width punctuation separates.",
     "我们正在开发一个文档近似重复检测系统。它支持中文、日文和韩文！\n")
case("japanese", "japanese.txt",
     "Kanji, hiragana and katakana letters are single tokens; the prolonged sound mark ー (Common) too here.",
     "東京タワーは日本の電波塔です。カタカナとひらがなを使います。\n")
case("korean", "korean.txt", "Hangul is written with spaces: words are runs of syllables.",
     "한국어 텍스트 처리는 공백으로 단어를 구분합니다. 서울특별시\n")
case("thai", "thai.txt",
     "Thai letters are single tokens with their following marks; NFKC splits SARA AM into nikhahit + sara aa.",
     "ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรค กำลัง น้ำ\n")
case("arabic", "arabic.txt", "Arabic with harakat (Mn) and tatweel (Lm); Arabic-Indic digits alone drop.",
     "اللغة العربية تكتب من اليمين إلى اليسار. مَرْحَبًا بِكُمْ ١٢٣ كتـــاب\n")
case("hindi", "hindi.txt", "Devanagari spacing (Mc) and nonspacing (Mn) marks stay inside words.",
     "हिन्दी भाषा देवनागरी लिपि में लिखी जाती है। क्षत्रिय\n")
case("emoji", "emoji.txt", "Emoji (So), ZWJ sequences, flags and variation selectors separate words.",
     "I \u2764\ufe0f Rust\U0001f980 \U0001f469\u200d\U0001f469\u200d\U0001f467 family \U0001f1eb\U0001f1f7 caf\u00e9\u2615ok\n")
case("latin1-windows-1252", "latin1-windows-1252.txt",
     "Legacy single-byte text without a declaration: chardetng detects windows-1252.",
     "Déjà vu: la façade du château, naïveté et crème brûlée — à côté du garçon. Où êtes-vous?\n".encode("cp1252"))
case("shift-jis", "shift-jis.txt", "Japanese in Shift_JIS without a declaration: detected.",
     "日本語の文章をシフトJISで保存しました。文字コードの自動判定を確認します。\n".encode("shift_jis"))
case("utf16le-bom", "utf16le-bom.txt", "UTF-16 little-endian with a byte order mark.",
     "\ufeffUTF-16 text: naïve café, 東京.\n".encode("utf-16-le"))
case("utf16be-bom", "utf16be-bom.txt", "UTF-16 big-endian with a byte order mark.",
     "\ufeffUTF-16 text: naïve café, 東京.\n".encode("utf-16-be"))
case("utf8-bom", "utf8-bom.txt", "UTF-8 with a BOM: the BOM is not text.", "\ufeffUTF-8 with a byte order mark.\n")
case("fullwidth", "fullwidth.txt", "Full-width Latin and digits fold to ASCII under NFKC.",
     "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ １２３ ａｂｃ１２３\n")
case("cyrillic", "cyrillic.txt", "Cyrillic with capitals, ё and a dash.", "Москва — СТОЛИЦА России. Ёлка и ёж.\n")
case("connector-punctuation", "connector-punctuation.txt", "Pc characters (_ and ‿) join tokens; digits alone drop.",
     "snake_case __init__ foo\u203fbar _42 x_1\n")
case("marks-and-spacing-diaeresis", "marks-and-spacing-diaeresis.txt",
     "A leading combining mark starts a token; U+00A8 decomposes to space + U+0308 and splits its chunk.",
     "\u0301abc M\u00a8uller e\u0301te\u0301\n")
case("crlf-tabs", "crlf-tabs.txt", "CRLF line ends, tabs and no-break spaces are only white space.",
     "first\tline\r\nsecond\u00a0line\r\n\r\n  third   line  \r\n")
case("html-basic", "html-basic.html",
     "HTML: head, script, style and comments are dropped; entities decoded; inline tags do not split words.",
     "<!DOCTYPE html>\n<html><head><title>Title is dropped</title><style>p { color: red }</style>\n"
     "<script>var dropped = 1;</script></head>\n<body><!-- a comment -->\n"
     "<h1>Caf&eacute; &amp; Cr&egrave;me</h1>\n<p><b>W</b>ord and <i>in</i>line, <span>x</span>y &lt;tag&gt;&nbsp;"
     "&#x1F600;&#233;t&eacute;</p>\n<p>Second<br>line &mdash; end</p>\n</body></html>\n")
case("html-structure", "html-structure.html",
     "Block elements separate words: tables, lists, figure captions, quotes and reference lists are kept.",
     "<html><body><main><table><tr><th>Name</th><td>Value</td></tr><tr><td>a</td><td>b</td></tr></table>\n"
     "<ul><li>one</li><li>two</li></ul><figure><img src=x.png alt=\"alt is not text\">"
     "<figcaption>Figure 1: a caption</figcaption></figure>\n<blockquote>To be or not to be</blockquote>"
     "<ol class=references><li>Knuth, D. The Art of Computer Programming.</li></ol>"
     "<div>bl</div><div>ock</div><span>in</span><span>line</span></main></body></html>\n")
case("html-dropped-elements", "html-dropped-elements.html",
     "svg, template, noscript, iframe and object content is dropped; math text is kept.",
     "<p>visible</p><svg><text>svg text</text></svg><template><p>template</p></template>"
     "<noscript>enable javascript</noscript><iframe>frame</iframe><math><mi>x</mi></math>"
     "<object><p>fallback</p></object><p>end</p>\n")
case("html-meta-charset", "html-meta-charset.html",
     "An HTML page in windows-1251 that declares it with <meta charset>.",
     ("<!doctype html><html><head><meta charset=\"windows-1251\"><title>t</title></head>"
      "<body><p>Привет, мир! Это страница в кодировке windows-1251.</p></body></html>\n").encode("cp1251"))
case("html-http-equiv-shift-jis", "html-http-equiv-shift-jis.htm",
     "An HTML page in Shift_JIS declared by http-equiv Content-Type.",
     ("<html><head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\"></head>"
      "<body><p>日本語のページです。</p></body></html>\n").encode("shift_jis"))
case("html-malformed", "html-malformed.html",
     "Broken markup is repaired by the HTML5 algorithm as browsers do.",
     "<p>unclosed <b>bold <i>nested</b> text</i><div>block<p>para<td>cell</table>&notanentity; &amp end\n")
case("pdf-malformed", "pdf-malformed.pdf", "A PDF is recognised by its magic bytes; one without a page tree is malformed.",
     b"%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n")


def pdf(pages):
    """A minimal PDF: each page is a list of lines in Helvetica (WinAnsi bytes), one line per 14 points."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", None,
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"]
    kids = []
    for lines in pages:
        ops = [b"BT /F1 11 Tf 72 740 Td 14 TL"]
        for line in lines:
            esc = line.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
            ops.append(b"(" + esc + b") Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops) if lines else b""
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content_id = len(objects)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % content_id)
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) + b"] /Count %d >>" % len(kids)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


case("pdf-text", "pdf-text.pdf",
     "A PDF's text layer in page order; a line-end hyphen before a lowercase letter joins the word; a spacing "
     "dieresis before a letter becomes a combining mark (M\u00a8uller -> M\u00fcller); page numbers are dropped.",
     pdf([[b"Cross-media near duplicates", b"A het-", b"erogeneous corpus by M\xa8uller and X-", b"Ray.", b"1"],
          [b"The second page keeps its words.", b"2"]]))
case("pdf-running-header", "pdf-running-header.pdf",
     "A line repeated at the top (or bottom) of at least half of 4 or more pages, digits aside, is a running header "
     "(footer) and dropped.",
     pdf([[b"Journal of Examples, page %d" % i, w.encode() + b" page of the body text about fingerprints.",
           b"Draft copy %d, do not cite" % i]
          for i, w in enumerate(["First", "Second", "Third", "Fourth", "Fifth"], 1)]))
case("pdf-no-text-layer", "pdf-no-text-layer.pdf",
     "A PDF whose pages have no text (a scan) is an error, not an empty fingerprint.",
     pdf([[], []]))

# One short paper in three media (README's cross-media example; the CLI test checks they are within k = 3).
PAPER_TITLE = "Fingerprints across media"
PAPER = ("Near duplicate detection finds documents that say the same thing in different forms. A fingerprint "
         "summarizes the words of a document in sixty four bits, and two documents whose fingerprints differ in "
         "few bits are likely to be copies. We measure this across media: the same paper as a portable document, "
         "as a web page and as journal XML should give one fingerprint.")
PAPER_SENTENCES = [x if x.endswith(".") else x + "." for x in PAPER.split(". ")]


def wrap(text, width):
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = (line + " " + word).strip()
    lines.append(line)
    return lines


paper_lines = wrap(PAPER, 60)
# Hyphenate one word across a line end, as typesetters do.
i = next(i for i in range(len(paper_lines) - 1) if paper_lines[i + 1].startswith("fingerprints "))
paper_lines[i] += " finger-"
paper_lines[i + 1] = paper_lines[i + 1][len("finger"):]
case("paper-pdf", "paper.pdf", "The cross-media paper as PDF: title, wrapped lines, a page number.",
     pdf([[PAPER_TITLE.encode()] + [l.encode() for l in paper_lines] + [b"1"]]))
case("paper-html", "paper.html", "The cross-media paper as a web page: navigation, head and footer are not content.",
     "<!DOCTYPE html><html><head><title>Example site: paper</title></head><body><header>Example site</header>"
     "<nav><a href=/>Home</a> <a href=/papers>Papers</a></nav><main><h1>" + PAPER_TITLE + "</h1>"
     + "".join(f"<p>{x}</p>" for x in PAPER_SENTENCES) + "</main><footer>Copyright 2026</footer></body></html>\n")
case("paper-xml", "paper.xml", "The cross-media paper as JATS XML: journal metadata and ids are not content.",
     '<?xml version="1.0" encoding="UTF-8"?>\n<article article-type="research-article"><front><journal-meta>'
     "<journal-title-group><journal-title>Journal of Examples</journal-title></journal-title-group></journal-meta>"
     '<article-meta><article-id pub-id-type="doi">10.1234/jex.2026.2</article-id><title-group><article-title>'
     + PAPER_TITLE + "</article-title></title-group></article-meta></front><body>"
     + "".join(f"<p>{x}</p>" for x in PAPER_SENTENCES) + "</body></article>\n")

JATS = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Publishing DTD v1.3 20210610//EN" "JATS-journalpublishing1-3.dtd">
<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="research-article" dtd-version="1.3">
<front><journal-meta><journal-id>J Ex</journal-id><journal-title-group><journal-title>Journal of Examples</journal-title></journal-title-group><issn>1234-5678</issn></journal-meta>
<article-meta><article-id pub-id-type="doi">10.1234/jex.2026.1</article-id>
<title-group><article-title>Near duplicates across <italic>media</italic></article-title></title-group>
<contrib-group><contrib contrib-type="author"><name><surname>M&uuml;ller</surname><given-names>Anna</given-names></name><xref ref-type="aff" rid="aff1">1</xref></contrib></contrib-group>
<aff id="aff1"><label>1</label>Institute of Examples, Example City</aff>
<abstract><p>We fingerprint the same paper as PDF, HTML and XML&nbsp;&mdash; and compare.</p></abstract>
</article-meta></front>
<body><sec><title>Introduction</title><p>Documents are <bold>re</bold>published in many media <xref ref-type="bibr" rid="r1">[1]</xref>; see <ext-link ext-link-type="uri" xlink:href="https://example.org/data">the data</ext-link>.</p>
<fig id="f1"><label>Figure 1</label><caption><p>Distances between renditions.</p></caption><object-id>fig-obj-1</object-id><graphic xlink:href="f1.png"/></fig>
<table-wrap id="t1"><caption><p>Table of media.</p></caption><table><tr><th>Medium</th><th>Pairs</th></tr><tr><td>PDF</td><td>130</td></tr></table></table-wrap>
</sec></body>
<back><ack><p>Thanks to the archive.</p></ack><ref-list><title>References</title><ref id="r1"><mixed-citation>Charikar M. Similarity estimation techniques. <source>STOC</source>. 2002. <pub-id pub-id-type="doi">10.1145/509907.509965</pub-id></mixed-citation></ref></ref-list></back>
</article>
"""
case("xml-jats", "jats-article.xml",
     "JATS: article title, abstract, body (captions, tables) and back matter with the reference list; journal "
     "metadata, ids, contributors, affiliations, object-id and pub-id are left out; HTML entities resolve.", JATS)
case("xml-tei", "tei.xml",
     "TEI: the text element only (teiHeader and fw running heads left out); hi is inline.",
     """<?xml version="1.0" encoding="UTF-8"?>
<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>Header title</title></titleStmt>
<publicationStmt><p>Publication statement</p></publicationStmt><sourceDesc><p>Born digital</p></sourceDesc></fileDesc></teiHeader>
<text><body><fw type="header">Running head 12</fw><head>Chapter One</head><p>It was a <hi rend="italic">bright</hi> cold day in April.</p>
<p>The clocks were striking thirteen.</p></body></text></TEI>
""")
case("xml-docbook", "docbook.xml",
     "DocBook 5: info metadata and index terms left out; emphasis, literal and link are inline.",
     """<?xml version="1.0" encoding="utf-8" ?>
<!DOCTYPE article>
<article xmlns="http://docbook.org/ns/docbook" version="5.0" xmlns:xlink="http://www.w3.org/1999/xlink">
  <info><title>Bytes Objects - Example documentation</title></info>
  <section xml:id="bytes"><title>Bytes Objects</title>
    <para>These functions raise <link xlink:href="exceptions.html"><literal>TypeError</literal></link> when
    <emphasis>called</emphasis> with a non-bytes parameter.<indexterm><primary>bytes</primary></indexterm></para>
    <variablelist><varlistentry><term>PyBytes_Type</term><listitem><para>The type object.</para></listitem></varlistentry></variablelist>
  </section>
</article>
""")
case("xml-generic-entities", "generic-entities.xml",
     "Other XML: all text, every element boundary separates words; internal entities expand; an external "
     "entity is not fetched and separates; the declared encoding (ISO-8859-1) is used.",
     ("""<?xml version="1.0" encoding="ISO-8859-1"?>
<!DOCTYPE catalog [<!ENTITY co "Caf\u00e9 &amp; Co"><!ENTITY ext SYSTEM "http://example.org/ext.xml">]>
<catalog><item><name>Cr\u00e8me</name><price>3</price></item><item>&co;&ext;br\u00fbl\u00e9e<b>x</b>y &#x3A9;</item></catalog>
""").encode("latin-1"))
case("html-main-content", "html-main-content.html",
     "HTML main content: the main element is the content; nav, aside, forms and hidden elements inside it are "
     "dropped; its own header is kept; page header and footer outside it are not.",
     "<!DOCTYPE html><html><head><title>Page title</title></head><body>\n"
     "<header><a href=/>Site name</a><nav><a href=/a>About</a> <a href=/b>Blog</a></nav></header>\n"
     "<main><article><header><h1>The article title</h1><p class=byline>By A. Writer</p></header>\n"
     "<p>First paragraph of the article.</p><aside>Related: other posts</aside>\n"
     "<p hidden>hidden text</p><div style=\"display: none\">also hidden</div>\n"
     "<form><input name=q><button>Search</button></form><p>Last paragraph.</p></article></main>\n"
     "<footer>Copyright 2026 Example</footer></body></html>\n")
case("html-role-main", "html-role-main.html",
     "HTML main content: without a main element, the first element with role=main (Sphinx's div.body) is the content.",
     "<html><body><div class=sphinxsidebar><h3>Navigation</h3><ul><li>Index</li></ul></div>"
     "<div class=body role=\"main\"><h1>Bytes Objects</h1><p>These functions raise TypeError.</p></div>"
     "<div class=footer>Last updated 2026</div></body></html>\n")
case("html-no-main-content", "html-no-main-content.html",
     "HTML without a main-content element: the whole body, less header, footer, nav, aside and forms.",
     "<html><body><header>Site banner</header><nav>Home | Docs</nav><h1>Title</h1><p>Body text.</p>"
     "<article>one</article><article>two</article><aside>Side</aside><footer>Footer</footer></body></html>\n")


def epub(chapters):
    """A minimal EPUB 3: mimetype first and stored, container.xml, a package document, XHTML chapters."""
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype", (2026, 1, 1, 0, 0, 0)), "application/epub+zip",
                   compress_type=zipfile.ZIP_STORED)

        def add(name, data):
            z.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), data, compress_type=zipfile.ZIP_DEFLATED)
        add("META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            '</rootfiles></container>')
        items = "".join(f'<item id="c{i}" href="text/ch{i}.xhtml" media-type="application/xhtml+xml"/>'
                        for i in range(len(chapters)))
        # The spine order is not the manifest order: the spine decides.
        spine = "".join(f'<itemref idref="c{i}"/>' for i in reversed(range(len(chapters))))
        add("OEBPS/content.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
            '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Metadata title</dc:title>'
            '<dc:identifier id="id">urn:uuid:0</dc:identifier></metadata>'
            f'<manifest>{items}<item id="img" href="cover.png" media-type="image/png"/></manifest>'
            f'<spine>{spine}</spine></package>')
        for i, body in enumerate(chapters):
            add(f"OEBPS/text/ch{i}.xhtml",
                '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head>'
                f'<title>Chapter {i}</title></head><body>{body}</body></html>')
    return buf.getvalue()


case("epub-spine", "book.epub",
     "EPUB: the spine's XHTML documents in spine order (not manifest order), each as HTML; metadata left out.",
     epub(["<h1>Second in the spine</h1><p>Closing words.</p>",
           "<h1>First in the spine</h1><p>Opening words &amp; more.</p>"]))


def warc_record(kind, uri, block):
    head = (f"WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {uri}\r\nWARC-Date: 2026-11-22T00:00:00Z\r\n"
            f"Content-Type: application/http; msgtype={kind}\r\nContent-Length: {len(block)}\r\n\r\n").encode()
    return head + block + b"\r\n\r\n"


def warc_gz(records):
    import gzip
    # One gzip member per record, as crawlers write them.
    return b"".join(gzip.compress(r, mtime=0) for r in records)


def chunked(data, size=7):
    return b"".join(b"%x\r\n" % len(data[i:i + size]) + data[i:i + size] + b"\r\n"
                    for i in range(0, len(data), size)) + b"0\r\n\r\n"


import gzip as _gzip
WARC = warc_gz([
    b"WARC/1.1\r\nWARC-Type: warcinfo\r\nContent-Type: application/warc-fields\r\nContent-Length: 19\r\n\r\n"
    b"software: example\r\n\r\n\r\n",
    warc_record("request", "http://example.org/a", b"GET /a HTTP/1.1\r\nHost: example.org\r\n\r\n"),
    warc_record("response", "http://example.org/a",
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=windows-1251\r\nTransfer-Encoding: chunked\r\n\r\n"
                + chunked("<html><body><main><p>Привет из архива, страница в windows-1251.</p></main></body></html>"
                          .encode("cp1251"))),
    warc_record("response", "http://example.org/b.txt",
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\n\r\n"
                + _gzip.compress(b"Plain text sent gzip-compressed over HTTP.\n", mtime=0)),
    warc_record("response", "http://example.org/missing",
                b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n\r\n<p>not found</p>"),
    warc_record("response", "http://example.org/logo.png",
                b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\n"),
])
with open(os.path.join(HERE, "inputs", "crawl.warc.gz"), "wb") as f:
    f.write(WARC)
CASES.append(("warc-chunked-charset", "inputs/crawl.warc.gz#http://example.org/a",
              "WARC response record: chunked transfer decoded, the HTTP charset (windows-1251) honoured, id = "
              "WARC-Target-URI."))
CASES.append(("warc-gzip-text", "inputs/crawl.warc.gz#http://example.org/b.txt",
              "WARC response record: a text/plain body with Content-Encoding gzip."))

# One document over 1 MB: a long HTML page, made deterministically.
rng = random.Random(20261122)
words = ("near duplicate document fingerprint similarity index query table block permutation hamming distance "
         "shingle token normalize unicode extract archive crawler corpus cluster pair threshold estimate "
         "library release version page section figure caption reference author abstract method result").split()
parts = ["<!DOCTYPE html><html><head><title>Large</title><style>td{padding:1px}</style></head><body>\n"]
size = 0
section = 0
while size < 1_100_000:
    section += 1
    parts.append(f"<h2 id=\"s{section}\">Section {section}: {rng.choice(words).title()} {rng.choice(words)}</h2>\n")
    for _ in range(5):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(8, 20)))
        parts.append(f"<p class=\"body\">{sentence.capitalize()}, <em>{rng.choice(words)}</em> &amp; "
                     f"<a href=\"https://example.org/{section}\">{rng.choice(words)}</a>.</p>\n")
    parts.append("<table><tr>" + "".join(f"<td>{rng.choice(words)}</td>" for _ in range(6)) + "</tr></table>\n")
    size = sum(len(p) for p in parts)
parts.append("</body></html>\n")
case("large-html", "large.html", "A generated HTML page over 1 MB (scale and determinism).", "".join(parts))

with open(os.path.join(HERE, "cases.tsv"), "w", encoding="utf-8") as f:
    f.write("name\tinput\tdescription\n")
    for name, path, desc in CASES:
        f.write(f"{name}\t{path}\t{desc}\n")
print(f"{len(CASES)} cases")
