//! HTML to text (simhash-doc-v1 spec, "HTML").
//!
//! The document is parsed by html5ever (the HTML5 parsing algorithm browsers use, via `scraper`), so broken
//! markup, entities and implied tags come out as a browser would see them. The text is every text node of the
//! document except those inside the dropped elements, in document order. Block-level elements (and `br`,
//! `hr`) separate what comes before and after them; inline elements do not, so `<b>W</b>ord` is one word.
//! Comments, doctypes and processing instructions carry no text. The tree is walked without recursion, so a
//! million nested elements cost memory, not the stack.

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

/// Extracts the text of an HTML document that is already decoded.
pub(crate) fn html_to_text(source: &str) -> String {
    let document = Html::parse_document(source);
    let mut out = TextBuilder::with_capacity(source.len() / 2);
    let mut dropped_depth = 0usize;
    for edge in document.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(e) => {
                    let name = e.name();
                    if dropped_depth > 0 || DROPPED.contains(&name) {
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
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::html_to_text;

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
    fn deep_nesting_does_not_overflow() {
        let depth = 20_000;
        let html = "<div>".repeat(depth) + "deep" + &"</div>".repeat(depth);
        assert_eq!(html_to_text(&html), "deep");
    }
}
