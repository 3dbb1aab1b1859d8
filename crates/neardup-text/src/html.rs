//! HTML to text (simhash-doc-v1 spec, "HTML").
//!
//! The document is parsed by html5ever (the HTML5 parsing algorithm browsers use, via `scraper`), so broken
//! markup, entities and implied tags come out as a browser would see them. The text is every text node of the
//! document except those inside the dropped elements, in document order. Block-level elements (and `br`,
//! `hr`) separate what comes before and after them; inline elements do not, so `<b>W</b>ord` is one word.
//! Comments, doctypes and processing instructions carry no text. The tree is walked without recursion, so a
//! million nested elements cost memory, not the stack.

use crate::ExtractError;
use crate::limits::MAX_HTML_DEPTH;
use crate::text_builder::TextBuilder;
use ego_tree::iter::Edge;
use scraper::{Html, Node};

/// Elements whose whole subtree carries no document text.
const DROPPED: &[&str] = &[
    "head", "script", "style", "noscript", "template", "svg", "iframe", "noembed", "noframes",
    "object",
];

/// Elements that break the text into separate blocks (the CSS `display` of block, list-item, table parts, and
/// the line-breaking void elements).
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "br",
    "caption",
    "center",
    "dd",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "frameset",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "html",
    "legend",
    "li",
    "listing",
    "main",
    "menu",
    "nav",
    "ol",
    "optgroup",
    "option",
    "p",
    "plaintext",
    "pre",
    "search",
    "section",
    "select",
    "summary",
    "table",
    "tbody",
    "td",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "xmp",
];

/// Elements left out of the main content wherever they are: navigation, side notes, forms and their controls.
const BOILERPLATE: &[&str] = &["nav", "aside", "form", "button", "select", "textarea"];

/// Page headers and footers: left out when no main-content element was found (the whole `body` is the
/// content), kept inside a selected main-content element (where they hold the article's title and byline).
const PAGE_FRAME: &[&str] = &["header", "footer"];

/// Whether an element is hidden by its attributes: `hidden`, `aria-hidden="true"`, or an inline style with
/// `display:none` or `visibility:hidden`.
fn is_hidden(e: &scraper::node::Element) -> bool {
    if e.attr("hidden").is_some() {
        return true;
    }
    if e.attr("aria-hidden")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return true;
    }
    e.attr("style").is_some_and(|style| {
        let compact: String = style
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        compact.contains("display:none") || compact.contains("visibility:hidden")
    })
}

/// Whether the element and its subtree carry no text at all.
fn is_dropped(e: &scraper::node::Element) -> bool {
    DROPPED.contains(&e.name()) || BOILERPLATE.contains(&e.name()) || is_hidden(e)
}

/// Chooses the main-content element (simhash-doc-v1 spec, "HTML main content"): among elements outside
/// dropped and hidden subtrees, the first `main`; else the first element with `role="main"`; else the
/// `article` if there is exactly one; else the first element with `itemprop="articleBody"`. `None` means the
/// whole document is the content.
fn main_content(document: &Html) -> Option<ego_tree::NodeId> {
    let (mut main, mut role_main, mut articles, mut article, mut body) =
        (None, None, 0, None, None);
    let mut dropped_depth = 0usize;
    for edge in document.tree.root().traverse() {
        match edge {
            Edge::Open(node) => {
                if let Node::Element(e) = node.value() {
                    if dropped_depth > 0 || is_dropped(e) {
                        dropped_depth += 1;
                        continue;
                    }
                    let name = e.name();
                    if name == "main" && main.is_none() {
                        main = Some(node.id());
                    }
                    if role_main.is_none()
                        && e.attr("role")
                            .is_some_and(|r| r.trim().eq_ignore_ascii_case("main"))
                    {
                        role_main = Some(node.id());
                    }
                    if name == "article" {
                        articles += 1;
                        article = Some(node.id());
                    }
                    if body.is_none()
                        && e.attr("itemprop")
                            .is_some_and(|v| v.split_ascii_whitespace().any(|t| t == "articleBody"))
                    {
                        body = Some(node.id());
                    }
                }
            }
            Edge::Close(node) => {
                if matches!(node.value(), Node::Element(_)) && dropped_depth > 0 {
                    dropped_depth -= 1;
                }
            }
        }
    }
    main.or(role_main)
        .or(if articles == 1 { article } else { None })
        .or(body)
}

/// Extracts the main-content text of an HTML document that is already decoded.
pub(crate) fn html_to_text(source: &str) -> Result<String, ExtractError> {
    let depth = nesting_upper_bound(source);
    if depth > MAX_HTML_DEPTH {
        return Err(ExtractError::TooDeep {
            limit: MAX_HTML_DEPTH,
        });
    }
    let document = Html::parse_document(source);
    let root_id = main_content(&document);
    let root = root_id
        .and_then(|id| document.tree.get(id))
        .unwrap_or_else(|| document.tree.root());
    let drop_frame = root_id.is_none();
    let mut out = TextBuilder::with_capacity(source.len() / 2);
    let mut dropped_depth = 0usize;
    for edge in root.traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(e) => {
                    let name = e.name();
                    if dropped_depth > 0
                        || is_dropped(e)
                        || (drop_frame && PAGE_FRAME.contains(&name))
                    {
                        dropped_depth += 1;
                    } else if BLOCKS.contains(&name) {
                        out.block_break();
                    }
                }
                Node::Text(t) if dropped_depth == 0 => out.push_collapsing(t),
                _ => {}
            },
            Edge::Close(node) => {
                if let Node::Element(e) = node.value() {
                    if dropped_depth > 0 {
                        dropped_depth -= 1;
                    } else if BLOCKS.contains(&e.name()) {
                        out.block_break();
                    }
                }
            }
        }
    }
    Ok(out.finish())
}

/// Elements that never have content, and elements whose end tag may be left out (the parser closes them):
/// neither adds to the nesting bound.
const NOT_NESTING: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup",
    "thead", "tbody", "tfoot", "colgroup", "rb", "rt", "rp", "html", "head", "body", "frame",
];

/// An upper bound on the nesting depth the HTML parser will build: start tags minus end tags, over the
/// elements that nest. The HTML5 tree builder scans its stack of open elements for many tags, so a
/// million-deep document costs time quadratic in its depth: it is refused before parsing.
fn nesting_upper_bound(source: &str) -> usize {
    let b = source.as_bytes();
    let (mut depth, mut max) = (0usize, 0usize);
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        i += off + 1;
        let close = b.get(i) == Some(&b'/');
        let start = if close { i + 1 } else { i };
        let len = b[start..]
            .iter()
            .take(16)
            .take_while(|c| c.is_ascii_alphanumeric())
            .count();
        if len == 0 || !b[start].is_ascii_alphabetic() {
            continue;
        }
        let name = source[start..start + len].to_ascii_lowercase();
        if NOT_NESTING.contains(&name.as_str()) {
            continue;
        }
        if close {
            depth = depth.saturating_sub(1);
        } else {
            let self_closing = b[start + len..]
                .iter()
                .position(|&c| c == b'>')
                .is_some_and(|gt| gt > 0 && b[start + len + gt - 1] == b'/');
            if !self_closing {
                depth += 1;
                max = max.max(depth);
            }
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html_to_text(s: &str) -> String {
        super::html_to_text(s).unwrap()
    }

    #[test]
    fn rules() {
        assert_eq!(
            html_to_text("<p>Hello <b>W</b>orld</p><p>next</p>"),
            "Hello World\nnext"
        );
        assert_eq!(
            html_to_text(
                "<html><head><title>T</title><style>p{}</style></head><body>a<script>x</script>b</body>"
            ),
            "ab"
        );
        assert_eq!(
            html_to_text("<table><tr><td>1</td><td>2</td></tr></table>"),
            "1\n2"
        );
        assert_eq!(
            html_to_text("a<br>b<!-- c -->d &amp; &eacute;&#x41;"),
            "a\nbd & éA"
        );
        assert_eq!(
            html_to_text("<figure><img alt=x><figcaption>Fig 1</figcaption></figure>"),
            "Fig 1"
        );
        assert_eq!(
            html_to_text(
                "<svg><text>no</text></svg><template><p>no</p></template><noscript>no</noscript>ok"
            ),
            "ok"
        );
        assert_eq!(html_to_text("<pre>  a\n\n  b  </pre>"), "a b");
        assert_eq!(html_to_text(""), "");
    }

    #[test]
    fn main_content() {
        let page = |body: &str| {
            html_to_text(&format!(
                "<body><header>Site</header><nav>Home | About</nav>{body}<footer>(c) 2026</footer></body>"
            ))
        };
        // No main element: header, footer, nav dropped; the rest kept.
        assert_eq!(page("<p>Text</p><aside>ad</aside>"), "Text");
        // main wins over role=main and articles; header inside it is the article's own and kept.
        assert_eq!(
            page("<div role=main>R</div><main><header>Title</header><p>M</p><nav>toc</nav></main>"),
            "Title\nM"
        );
        assert_eq!(page("<p>x</p><div role=\"Main\">R <b>b</b></div>"), "R b");
        // A single article is the content; two articles are not a choice.
        assert_eq!(page("<p>x</p><article>A</article>"), "A");
        assert_eq!(page("<article>A</article><article>B</article>"), "A\nB");
        assert_eq!(
            page("<p>x</p><div itemprop=\"text articleBody\">I</div>"),
            "I"
        );
        // Hidden elements and forms carry no text, and a hidden main is not chosen.
        assert_eq!(
            page(
                "<main hidden>no</main><p>a<span style=\"DISPLAY: none\">no</span><span aria-hidden=true>no</span></p><form>q<button>Go</button></form>"
            ),
            "a"
        );
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let depth = MAX_HTML_DEPTH;
        let html = "<div>".repeat(depth) + "deep" + &"</div>".repeat(depth);
        assert_eq!(html_to_text(&html), "deep");
        let html = "<div>".repeat(1_000_000) + "deep";
        assert_eq!(
            super::html_to_text(&html),
            Err(ExtractError::TooDeep {
                limit: MAX_HTML_DEPTH
            })
        );
        // Unclosed paragraphs and list items are closed by the parser: no limit for them.
        let html = "<p>a".repeat(50_000) + &"<li>b".repeat(50_000);
        assert!(super::html_to_text(&html).is_ok());
    }
}
