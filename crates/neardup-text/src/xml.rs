//! XML to text (simhash-doc-v1 spec, "XML").
//!
//! The document is read as a stream of events by quick-xml: no tree is built, so memory is the size of the
//! text, and nesting costs one byte of state per open element (capped by [`MAX_DEPTH`]). The vocabulary is
//! recognised at the root element:
//!
//! * **JATS** (`article`, or a JATS/NLM doctype): the title group and abstracts of `front`, then `body`,
//!   `back` (references, acknowledgements, appendices) and `floats-group`; identifiers (`pub-id`,
//!   `object-id`), affiliations and other metadata are left out.
//! * **TEI** (`TEI`, `teiCorpus`, or the TEI namespace): the `text` elements; `teiHeader` and `fw`
//!   (running heads and page numbers of a transcription) are left out.
//! * **DocBook** (the DocBook namespace or doctype, or a `book`/`chapter`/`refentry` root): everything but the
//!   metadata containers (`info`, `bookinfo`, `articleinfo`, ...), `indexterm` and `remark`.
//! * any other XML: all text.
//!
//! In the three known vocabularies, their inline elements (`italic`, `hi`, `emphasis`, ...) do not separate
//! words and every other element boundary does; in other XML every element boundary separates.
//!
//! Entities: the five predefined ones, character references, the HTML5 named entities (which cover the ISO
//! entity sets that JATS and TEI DTDs declare), and general entities declared in the internal DTD subset,
//! expanded recursively under a budget so that a "billion laughs" document is an error, not an out-of-memory.
//! External DTDs and entities are never fetched; an entity that is not known is a word separator.

use crate::text_builder::TextBuilder;
use quick_xml::events::Event;
use quick_xml::reader::Reader;
use std::collections::HashMap;

/// The deepest element nesting accepted.
pub const MAX_DEPTH: usize = 10_000;

/// Entity expansion may add at most this many bytes of text, or 10 times the document's size if larger, up
/// to [`MAX_ENTITY_TEXT`].
pub const MAX_ENTITY_EXPANSION: usize = 1 << 20;

/// The most text entity expansion may add to one document, whatever its size (memory, not a ratio, is what
/// a large document's expansion costs).
pub const MAX_ENTITY_TEXT: usize = 64 << 20;

/// Why an XML document gave no text.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum XmlError {
    /// Not well-formed XML.
    #[error("malformed XML at line {line}: {message}")]
    Syntax {
        /// The line (from 1) where the error was found.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Elements nest deeper than [`MAX_DEPTH`].
    #[error("XML elements nest deeper than the limit of {MAX_DEPTH} (line {line})")]
    TooDeep {
        /// The line where the limit was passed.
        line: usize,
    },
    /// Entity expansion passed its budget (a "billion laughs" document).
    #[error(
        "XML entity expansion passed the limit of {limit} bytes (entities that expand exponentially?)"
    )]
    EntityBomb {
        /// The budget in bytes.
        limit: usize,
    },
    /// An entity refers to itself.
    #[error("XML entity '{0}' refers to itself")]
    EntityLoop(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vocabulary {
    Jats,
    Tei,
    DocBook,
    Other,
}

/// What happens to an element's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Visibility {
    /// Its text is kept.
    Shown,
    /// Its text is left out, but selected descendants may be shown (JATS `front`, the TEI root).
    Dormant,
    /// Its whole subtree is left out.
    Hidden,
}

const JATS_INLINE: &[&str] = &[
    "abbrev",
    "bold",
    "email",
    "ext-link",
    "fixed-case",
    "inline-formula",
    "inline-graphic",
    "italic",
    "monospace",
    "named-content",
    "overline",
    "roman",
    "sans-serif",
    "sc",
    "strike",
    "styled-content",
    "sub",
    "sup",
    "underline",
    "uri",
    "xref",
    "ruby",
    "rb",
    "rt",
];

const JATS_FRONT_SHOWN: &[&str] = &[
    "article-title",
    "subtitle",
    "trans-title",
    "trans-subtitle",
    "abstract",
    "trans-abstract",
];

const JATS_HIDDEN: &[&str] = &[
    "pub-id",
    "object-id",
    "aff",
    "aff-alternatives",
    "author-notes",
    "journal-meta",
    "permissions",
    "history",
    "funding-group",
    "custom-meta-group",
    "processing-meta",
    "contrib-group",
];

const TEI_INLINE: &[&str] = &[
    "abbr",
    "add",
    "choice",
    "corr",
    "date",
    "del",
    "emph",
    "expan",
    "foreign",
    "gloss",
    "hi",
    "mentioned",
    "name",
    "num",
    "orgName",
    "orig",
    "persName",
    "placeName",
    "ptr",
    "q",
    "ref",
    "reg",
    "rs",
    "sic",
    "soCalled",
    "term",
    "title",
    "unclear",
    "supplied",
    "seg",
    "w",
    "c",
    "pc",
];

const DOCBOOK_INLINE: &[&str] = &[
    "abbrev",
    "acronym",
    "application",
    "citetitle",
    "classname",
    "code",
    "command",
    "computeroutput",
    "constant",
    "email",
    "emphasis",
    "envar",
    "filename",
    "firstterm",
    "foreignphrase",
    "function",
    "glossterm",
    "guibutton",
    "guilabel",
    "guimenu",
    "keycap",
    "link",
    "literal",
    "markup",
    "methodname",
    "option",
    "parameter",
    "phrase",
    "productname",
    "prompt",
    "property",
    "quote",
    "replaceable",
    "subscript",
    "superscript",
    "systemitem",
    "tag",
    "trademark",
    "type",
    "ulink",
    "uri",
    "userinput",
    "varname",
    "wordasword",
    "xref",
    "anchor",
];

const DOCBOOK_HIDDEN: &[&str] = &[
    "info",
    "bookinfo",
    "articleinfo",
    "chapterinfo",
    "sectioninfo",
    "sect1info",
    "sect2info",
    "sect3info",
    "prefaceinfo",
    "appendixinfo",
    "partinfo",
    "refentryinfo",
    "setinfo",
    "indexterm",
    "remark",
];

impl Vocabulary {
    fn recognise(root: &str, xmlns: Option<&str>, doctype: &str) -> Vocabulary {
        let doctype = doctype.to_ascii_lowercase();
        let ns = xmlns.unwrap_or("");
        if root == "TEI" || root == "teiCorpus" || ns.contains("tei-c.org") {
            Vocabulary::Tei
        } else if ns.contains("docbook.org")
            || doctype.contains("docbook")
            || matches!(root, "book" | "chapter" | "refentry")
        {
            Vocabulary::DocBook
        } else if root == "article" || doctype.contains("jats") || doctype.contains("nlm") {
            Vocabulary::Jats
        } else {
            Vocabulary::Other
        }
    }

    fn root_visibility(self) -> Visibility {
        match self {
            Vocabulary::Tei => Visibility::Dormant,
            _ => Visibility::Shown,
        }
    }

    /// The visibility of an element with this local name inside a parent of visibility `parent`.
    fn child(self, name: &str, parent: Visibility) -> Visibility {
        if parent == Visibility::Hidden {
            return Visibility::Hidden;
        }
        match self {
            Vocabulary::Jats => {
                if JATS_HIDDEN.contains(&name) {
                    Visibility::Hidden
                } else if matches!(name, "front" | "front-stub") {
                    Visibility::Dormant
                } else if parent == Visibility::Dormant && JATS_FRONT_SHOWN.contains(&name) {
                    Visibility::Shown
                } else {
                    parent
                }
            }
            Vocabulary::Tei => match name {
                "teiHeader" | "fw" => Visibility::Hidden,
                "text" => Visibility::Shown,
                _ => parent,
            },
            Vocabulary::DocBook if DOCBOOK_HIDDEN.contains(&name) => Visibility::Hidden,
            _ => parent,
        }
    }

    fn is_inline(self, name: &str) -> bool {
        match self {
            Vocabulary::Jats => JATS_INLINE.contains(&name),
            Vocabulary::Tei => TEI_INLINE.contains(&name),
            Vocabulary::DocBook => DOCBOOK_INLINE.contains(&name),
            Vocabulary::Other => false,
        }
    }
}

/// Extracts the text of an XML document that is already decoded.
pub(crate) fn xml_to_text(source: &str) -> Result<String, XmlError> {
    let mut reader = Reader::from_str(source);
    {
        let config = reader.config_mut();
        config.trim_text(false);
        config.check_end_names = true;
        config.expand_empty_elements = false;
    }
    let line_at = |pos: u64| {
        let pos = (pos as usize).min(source.len());
        source.as_bytes()[..pos]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    };
    let mut out = TextBuilder::with_capacity(source.len() / 2);
    let mut entities = Entities {
        declared: HashMap::new(),
        budget: MAX_ENTITY_EXPANSION.max(source.len().saturating_mul(10).min(MAX_ENTITY_TEXT)),
    };
    let mut doctype = String::new();
    let mut vocabulary: Option<Vocabulary> = None;
    let mut stack: Vec<Visibility> = Vec::new();
    // Open element names, to check that every end tag closes the element it should.
    let mut names: Vec<String> = Vec::new();
    loop {
        let event = reader.read_event().map_err(|e| XmlError::Syntax {
            line: line_at(reader.error_position()),
            message: e.to_string(),
        })?;
        let shown = stack.last().is_some_and(|v| *v == Visibility::Shown);
        match event {
            Event::DocType(d) => {
                doctype = d.into_inner().into_owned();
                entities.declare_from_doctype(&doctype);
            }
            Event::Start(ref e) | Event::Empty(ref e) => {
                let is_empty = matches!(event, Event::Empty(_));
                let local = e.local_name();
                let name = local.as_ref();
                let vocab = *vocabulary.get_or_insert_with(|| {
                    let xmlns = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == "xmlns")
                        .map(|a| a.value.into_owned());
                    Vocabulary::recognise(name, xmlns.as_deref(), &doctype)
                });
                let visibility = match stack.last() {
                    None => vocab.root_visibility(),
                    Some(parent) => vocab.child(name, *parent),
                };
                if visibility == Visibility::Shown && !vocab.is_inline(name) {
                    out.block_break();
                }
                if is_empty {
                    if visibility == Visibility::Shown && !vocab.is_inline(name) {
                        out.block_break();
                    }
                } else {
                    if stack.len() >= MAX_DEPTH {
                        return Err(XmlError::TooDeep {
                            line: line_at(reader.buffer_position()),
                        });
                    }
                    stack.push(visibility);
                    names.push(e.name().as_ref().to_owned());
                }
            }
            Event::End(e) => {
                let expected = names.pop();
                if expected.as_deref() != Some(e.name().as_ref()) {
                    return Err(XmlError::Syntax {
                        line: line_at(reader.buffer_position()),
                        message: match expected {
                            Some(open) => {
                                format!("end tag </{}> closes <{open}>", e.name().as_ref())
                            }
                            None => format!("end tag </{}> without a start tag", e.name().as_ref()),
                        },
                    });
                }
                let visibility = stack.pop().unwrap_or(Visibility::Hidden);
                let vocab = vocabulary.unwrap_or(Vocabulary::Other);
                if visibility == Visibility::Shown && !vocab.is_inline(e.local_name().as_ref()) {
                    out.block_break();
                }
            }
            Event::Text(t) if shown => out.push_collapsing(&t.xml10_content()),
            Event::CData(t) if shown => out.push_collapsing(&t.into_inner()),
            Event::GeneralRef(r) if shown => {
                let name = r.xml10_content();
                if r.is_char_ref() {
                    match r.resolve_char_ref() {
                        Ok(Some(c)) => {
                            let mut buf = [0u8; 4];
                            out.push_collapsing(c.encode_utf8(&mut buf));
                        }
                        _ => {
                            return Err(XmlError::Syntax {
                                line: line_at(reader.buffer_position()),
                                message: format!("invalid character reference '&{name};'"),
                            });
                        }
                    }
                } else {
                    let mut text = String::new();
                    entities.expand(&name, &mut text, 0)?;
                    if text.is_empty() {
                        out.push_collapsing(" ");
                    } else {
                        out.push_collapsing(&text);
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(XmlError::Syntax {
            line: line_at(source.len() as u64),
            message: format!("the document ends inside {} open element(s)", stack.len()),
        });
    }
    if vocabulary.is_none() {
        return Err(XmlError::Syntax {
            line: line_at(source.len() as u64),
            message: "no root element".into(),
        });
    }
    Ok(out.finish())
}

/// Named entities: the internal subset's declarations, then the predefined and HTML5 ones.
struct Entities {
    declared: HashMap<String, String>,
    /// Bytes that expansion may still add.
    budget: usize,
}

impl Entities {
    /// Collects `<!ENTITY name "value">` declarations of general entities from the internal subset. Parameter
    /// entities (`%`) and external entities (`SYSTEM`, `PUBLIC`) are ignored: nothing is fetched. The first
    /// declaration of a name wins, as in XML.
    fn declare_from_doctype(&mut self, doctype: &str) {
        let mut rest = doctype;
        while let Some(at) = rest.find("<!ENTITY") {
            rest = &rest[at + 8..];
            let decl = rest.trim_start();
            if decl.starts_with('%') {
                continue;
            }
            let name_end = decl.find(|c: char| c.is_whitespace()).unwrap_or(decl.len());
            let name = &decl[..name_end];
            let after = decl[name_end..].trim_start();
            let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue;
            };
            let Some(close) = after[1..].find(quote) else {
                break;
            };
            let value = &after[1..1 + close];
            self.declared
                .entry(name.to_owned())
                .or_insert_with(|| value.to_owned());
        }
    }

    /// Appends the replacement text of entity `name` to `out`, expanding references inside it.
    fn expand(&mut self, name: &str, out: &mut String, depth: usize) -> Result<(), XmlError> {
        if depth > 32 {
            return Err(XmlError::EntityLoop(name.to_owned()));
        }
        // Each reference costs a byte of budget, so entities that expand to nothing cannot fan out forever.
        if self.budget == 0 {
            return Err(XmlError::EntityBomb {
                limit: MAX_ENTITY_EXPANSION,
            });
        }
        self.budget -= 1;
        if let Some(value) = self.declared.get(name).cloned() {
            let mut rest = value.as_str();
            while let Some(amp) = rest.find('&') {
                self.append(&rest[..amp], out)?;
                let Some(semi) = rest[amp..].find(';') else {
                    self.append(&rest[amp..], out)?;
                    rest = "";
                    break;
                };
                let inner = &rest[amp + 1..amp + semi];
                if let Some(num) = inner.strip_prefix('#') {
                    let code = match num.strip_prefix('x') {
                        Some(hex) => u32::from_str_radix(hex, 16).ok(),
                        None => num.parse().ok(),
                    };
                    if let Some(c) = code.and_then(char::from_u32) {
                        self.append(c.encode_utf8(&mut [0u8; 4]), out)?;
                    }
                } else if inner == name {
                    return Err(XmlError::EntityLoop(name.to_owned()));
                } else {
                    self.expand(inner, out, depth + 1)?;
                }
                rest = &rest[amp + semi + 1..];
            }
            self.append(rest, out)
        } else if let Some(value) = quick_xml::escape::resolve_html5_entity(name) {
            self.append(value, out)
        } else {
            // Unknown (declared in an external DTD that is not fetched): a word separator.
            self.append(" ", out)
        }
    }

    fn append(&mut self, s: &str, out: &mut String) -> Result<(), XmlError> {
        if s.len() > self.budget {
            return Err(XmlError::EntityBomb {
                limit: MAX_ENTITY_EXPANSION,
            });
        }
        self.budget -= s.len();
        out.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_xml_separates_at_every_element() {
        assert_eq!(
            xml_to_text("<?xml version='1.0'?><r><a>one</a><b>t<i>w</i>o</b> &amp; &#x41;&lt;</r>")
                .unwrap(),
            "one\nt\nw\no\n& A<"
        );
        assert_eq!(
            xml_to_text("<r><![CDATA[a <b> c]]><!-- no --><?pi no?></r>").unwrap(),
            "a <b> c"
        );
    }

    #[test]
    fn jats() {
        let doc = r#"<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Publishing DTD v1.3 20210610//EN" "JATS-journalpublishing1-3.dtd">
<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="research-article">
<front><journal-meta><journal-title>J</journal-title></journal-meta>
<article-meta><article-id pub-id-type="doi">10.1/x</article-id>
<title-group><article-title>A <italic>T</italic>itle</article-title></title-group>
<contrib-group><contrib><name><surname>Doe</surname></name></contrib></contrib-group>
<aff id="a1">Univ</aff>
<abstract><p>Abs&nbsp;tract &mdash; text.</p></abstract></article-meta></front>
<body><sec><title>Intro</title><p>See <xref ref-type="bibr" rid="r1">1</xref> and <ext-link xlink:href="http://x.org">site</ext-link>.</p>
<fig><caption><p>Fig cap</p></caption><object-id>obj</object-id></fig>
<table-wrap><table><tr><td>c1</td><td>c2</td></tr></table></table-wrap></sec></body>
<back><ref-list><ref id="r1"><mixed-citation>Knuth. <pub-id pub-id-type="doi">10.2/y</pub-id></mixed-citation></ref></ref-list></back>
</article>"#;
        assert_eq!(
            xml_to_text(doc).unwrap(),
            "A Title\nAbs tract \u{2014} text.\nIntro\nSee 1 and site.\nFig cap\nc1\nc2\nKnuth."
        );
    }

    #[test]
    fn tei_and_docbook() {
        let tei = r#"<TEI xmlns="http://www.tei-c.org/ns/1.0"><teiHeader><fileDesc><titleStmt><title>Meta</title></titleStmt></fileDesc></teiHeader>
<text><body><fw type="header">Running head</fw><p>The <hi rend="i">quick</hi> fox.</p><p>Two</p></body></text></TEI>"#;
        assert_eq!(xml_to_text(tei).unwrap(), "The quick fox.\nTwo");
        let db = r#"<article xmlns="http://docbook.org/ns/docbook" version="5.0"><info><title>Meta title</title></info>
<section><title>Bytes<link linkend="x">¶</link></title><para>Use <literal>f</literal>oo<indexterm><primary>no</primary></indexterm>.</para></section></article>"#;
        assert_eq!(xml_to_text(db).unwrap(), "Bytes¶\nUse foo.");
    }

    #[test]
    fn entities_and_limits() {
        let doc = r#"<!DOCTYPE r [<!ENTITY co "Company &amp; Co"><!ENTITY ext SYSTEM "http://example.org/x">]><r>&co; &ext;x &unknown;y</r>"#;
        assert_eq!(xml_to_text(doc).unwrap(), "Company & Co x y");
        let mut lol = String::from("<!DOCTYPE r [<!ENTITY l0 \"lollollollol\">");
        for i in 1..10 {
            let p = i - 1;
            lol.push_str(&format!(
                "<!ENTITY l{i} \"&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};&l{p};\">"
            ));
        }
        lol.push_str("]><r>&l9;</r>");
        assert!(matches!(
            xml_to_text(&lol),
            Err(XmlError::EntityBomb { .. })
        ));
        let looped = r#"<!DOCTYPE r [<!ENTITY a "&b;"><!ENTITY b "&a;">]><r>&a;</r>"#;
        assert!(matches!(xml_to_text(looped), Err(XmlError::EntityLoop(_))));
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(matches!(xml_to_text(&deep), Err(XmlError::TooDeep { .. })));
        let ok = "<a>".repeat(MAX_DEPTH) + "x" + &"</a>".repeat(MAX_DEPTH);
        assert_eq!(xml_to_text(&ok).unwrap(), "x");
        assert!(matches!(
            xml_to_text("<a><b></a>"),
            Err(XmlError::Syntax { .. })
        ));
        assert!(matches!(xml_to_text("<a>"), Err(XmlError::Syntax { .. })));
        assert!(matches!(xml_to_text("   "), Err(XmlError::Syntax { .. })));
    }
}
