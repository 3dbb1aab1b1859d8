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
case("pdf-unsupported", "pdf-unsupported.pdf", "A PDF is recognised by its magic bytes and refused (not yet a medium).",
     b"%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n")

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
