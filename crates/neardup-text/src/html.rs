//! HTML to text (simhash-doc-v1 spec, "HTML").
//!
//! The document is parsed by html5ever (the HTML5 parsing algorithm browsers use, via `scraper`), so broken
//! markup, entities and implied tags come out as a browser would see them. The text is every text node of the
//! document except those inside the dropped elements, in document order. Block-level elements (and `br`,
//! `hr`) separate what comes before and after them; inline elements do not, so `<b>W</b>ord` is one word.
//! Comments, doctypes and processing instructions carry no text. The tree is walked without recursion, so a
//! million nested elements cost memory, not the stack.

use crate::ExtractError;
use crate::limits::{HTML_TIMEOUT, MAX_HTML_ATTRIBUTES, MAX_HTML_DEPTH, MAX_HTML_ELEMENTS};
use crate::text_builder::TextBuilder;
use ego_tree::NodeId;
use ego_tree::iter::Edge;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName, driver};
use scraper::{Html, HtmlTreeSink, Node};
use std::borrow::Cow;
use std::cell::{Cell, Ref, RefCell};
use std::collections::HashMap;
use std::time::Instant;

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
    let document = parse_budgeted(source)?;
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

/// How much of the source the parser is given at a time: the budgets are checked between chunks, so this
/// bounds the work done past a budget before it is noticed. Small, because four bytes (`<p>x`) can make the
/// builder re-create every open formatting element (up to the depth budget): 256 bytes make at most about
/// 640,000 elements past the budget.
const CHUNK: usize = 256;

/// Parses a document under the markup budgets of [`crate::limits`].
///
/// The HTML5 tree builder scans its stack of open elements for many tokens, and rebuilds open formatting
/// elements after each block, so some shapes cost time quadratic in their size (a million nested elements,
/// formatting elements re-opened in every paragraph). Three guards, each linear:
/// * a pre-scan counts the attributes of every start tag (html5ever's tokenizer checks each new attribute
///   against the tag's earlier ones: quadratic in their number), before the parser sees the source;
/// * the tree sink counts the elements the builder creates (the ones it re-creates too) and the depth of
///   each, exactly as built, and flags the first budget passed;
/// * the source is fed in chunks, and between chunks the flag and the clock are read.
///
/// The chunks change nothing in the tree: the tokenizer is a streaming one and keeps its state across them.
fn parse_budgeted(source: &str) -> Result<Html, ExtractError> {
    check_attributes(source)?;
    let started = Instant::now();
    let sink = BudgetedSink::new();
    let mut parser = driver::parse_document(sink, Default::default());
    let mut rest = source;
    while !rest.is_empty() {
        let mut cut = rest.len().min(CHUNK);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        parser.process(StrTendril::from_slice(&rest[..cut]));
        rest = &rest[cut..];
        if let Some(exceeded) = parser.tokenizer.sink.sink.exceeded.take() {
            return Err(exceeded);
        }
        if started.elapsed() > HTML_TIMEOUT {
            return Err(ExtractError::TimedOut {
                seconds: HTML_TIMEOUT.as_secs(),
            });
        }
    }
    let (document, exceeded) = parser.finish();
    exceeded.map_or(Ok(document), Err)
}

/// Refuses a start tag with more attributes than [`MAX_HTML_ATTRIBUTES`], in one pass: tags are read as the
/// HTML tokenizer reads them (names, quoted and unquoted values, comments), closely enough that a count here
/// is never below the tokenizer's.
fn check_attributes(source: &str) -> Result<(), ExtractError> {
    // The tokenizer's white space, and the bytes that end an attribute name.
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0c);
    let b = source.as_bytes();
    let skip = |mut i: usize, while_: &dyn Fn(u8) -> bool| {
        while i < b.len() && while_(b[i]) {
            i += 1;
        }
        i
    };
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        i += off + 1;
        if b[i..].starts_with(b"!--") {
            // A comment ends at the first `-->`; an unclosed one runs to the end.
            match b[i + 3..].windows(3).position(|w| w == b"-->") {
                Some(end) => i += 3 + end + 3,
                None => return Ok(()),
            }
            continue;
        }
        if !b.get(i).is_some_and(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        // A start tag: its name, then attributes up to `>`.
        i = skip(i, &|c| !(c == b'>' || c == b'/' || space(c)));
        let mut attributes = 0usize;
        loop {
            i = skip(i, &|c| c == b'/' || space(c));
            if i >= b.len() || b[i] == b'>' {
                break;
            }
            attributes += 1;
            if attributes > MAX_HTML_ATTRIBUTES {
                return Err(ExtractError::HtmlBudget {
                    what: "attributes on one element",
                    limit: MAX_HTML_ATTRIBUTES,
                });
            }
            // The name (a `=` may start it), then an optional value.
            i = skip(i + 1, &|c| !matches!(c, b'>' | b'/' | b'=') && !space(c));
            i = skip(i, &space);
            if b.get(i) != Some(&b'=') {
                continue;
            }
            i = skip(i + 1, &space);
            match b.get(i) {
                Some(&q @ (b'"' | b'\'')) => match b[i + 1..].iter().position(|&c| c == q) {
                    Some(end) => i += end + 2,
                    None => return Ok(()),
                },
                _ => i = skip(i, &|c| c != b'>' && !space(c)),
            }
        }
    }
    Ok(())
}

/// scraper's tree sink, counting what the tree builder makes: elements created, and each node's depth.
struct BudgetedSink {
    inner: HtmlTreeSink,
    elements: Cell<usize>,
    /// Depth of every node placed in the tree (the document is 0).
    depth: RefCell<HashMap<NodeId, u32>>,
    exceeded: Cell<Option<ExtractError>>,
}

impl BudgetedSink {
    fn new() -> Self {
        BudgetedSink {
            inner: HtmlTreeSink::new(Html::new_document()),
            elements: Cell::new(0),
            depth: RefCell::new(HashMap::new()),
            exceeded: Cell::new(None),
        }
    }

    fn exceed(&self, error: ExtractError) {
        let first = self.exceeded.take().unwrap_or(error);
        self.exceeded.set(Some(first));
    }

    /// Records that `child` now hangs under `parent`.
    fn placed(&self, parent: &NodeId, child: &NodeOrText<NodeId>) {
        let NodeOrText::AppendNode(child) = child else {
            return;
        };
        let mut depth = self.depth.borrow_mut();
        let d = depth.get(parent).copied().unwrap_or(0) + 1;
        depth.insert(*child, d);
        if d as usize > MAX_HTML_DEPTH {
            self.exceed(ExtractError::TooDeep {
                limit: MAX_HTML_DEPTH,
            });
        }
    }

    fn parent_of(&self, node: &NodeId) -> Option<NodeId> {
        let html = self.inner.0.borrow();
        html.tree.get(*node)?.parent().map(|p| p.id())
    }
}

impl TreeSink for BudgetedSink {
    type Handle = NodeId;
    type Output = (Html, Option<ExtractError>);
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Self::Output {
        let exceeded = self.exceeded.take();
        (self.inner.finish(), exceeded)
    }
    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg)
    }
    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }
    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.inner.elem_name(target)
    }
    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        let n = self.elements.get() + 1;
        self.elements.set(n);
        if n > MAX_HTML_ELEMENTS {
            self.exceed(ExtractError::HtmlBudget {
                what: "elements",
                limit: MAX_HTML_ELEMENTS,
            });
        }
        self.inner.create_element(name, attrs, flags)
    }
    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }
    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }
    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.placed(parent, &child);
        self.inner.append(parent, child)
    }
    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        let parent = self.parent_of(element).unwrap_or(*prev_element);
        self.placed(&parent, &child);
        self.inner
            .append_based_on_parent_node(element, prev_element, child)
    }
    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id)
    }
    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }
    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }
    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }
    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        if let Some(parent) = self.parent_of(sibling) {
            self.placed(&parent, &new_node);
        }
        self.inner.append_before_sibling(sibling, new_node)
    }
    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }
    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target)
    }
    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        // The children move one level under their new parent (their subtrees keep the depths they had: the
        // budget counts the deepest chain built, not every chain moved).
        let children: Vec<NodeId> = {
            let html = self.inner.0.borrow();
            html.tree
                .get(*node)
                .map(|n| n.children().map(|c| c.id()).collect())
                .unwrap_or_default()
        };
        for child in children {
            self.placed(new_parent, &NodeOrText::AppendNode(child));
        }
        self.inner.reparent_children(node, new_parent)
    }
    fn mark_script_already_started(&self, node: &NodeId) {
        self.inner.mark_script_already_started(node)
    }
    fn pop(&self, node: &NodeId) {
        self.inner.pop(node)
    }
    fn associate_with_form(
        &self,
        target: &NodeId,
        form: &NodeId,
        nodes: (&NodeId, Option<&NodeId>),
    ) {
        self.inner.associate_with_form(target, form, nodes)
    }
    fn is_mathml_annotation_xml_integration_point(&self, handle: &NodeId) -> bool {
        self.inner
            .is_mathml_annotation_xml_integration_point(handle)
    }
    fn set_current_line(&self, line_number: u64) {
        self.inner.set_current_line(line_number)
    }
    fn maybe_clone_an_option_into_selectedcontent(&self, option: &NodeId) {
        self.inner
            .maybe_clone_an_option_into_selectedcontent(option)
    }
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
        let depth = MAX_HTML_DEPTH - 3; // html, body and the text
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

    /// Shapes that hung the parser (or a pre-check that counted tags instead of building the tree): each is
    /// refused, or read, in well under a second.
    #[test]
    fn hostile_shapes_are_bounded() {
        let too_deep = Err(ExtractError::TooDeep {
            limit: MAX_HTML_DEPTH,
        });
        // `<div/>` is not self-closing in HTML: a million of them nest.
        assert_eq!(super::html_to_text(&"<div/>".repeat(1_000_000)), too_deep);
        // Stray end tags close nothing.
        assert_eq!(
            super::html_to_text(&"<div></x>".repeat(1_000_000)),
            too_deep
        );
        // End tags inside comments and attribute values close nothing either.
        assert_eq!(
            super::html_to_text(&"<div title='</div>'><!-- </div> -->".repeat(100_000)),
            too_deep
        );
        // A million `<` and no `>`: one unfinished tag, read in one pass.
        assert_eq!(html_to_text(&"<a".repeat(1_000_000)), "");
        assert!(super::html_to_text(&"< ".repeat(1_000_000)).is_ok());
        // Attributes: the tokenizer's duplicate check is quadratic, so a start tag may carry only so many.
        let many = format!("<p {}>x</p>", "a ".repeat(100_000));
        assert_eq!(
            super::html_to_text(&many),
            Err(ExtractError::HtmlBudget {
                what: "attributes on one element",
                limit: MAX_HTML_ATTRIBUTES
            })
        );
        let quoted = format!("<p title=\"{}\">x</p>", "a ".repeat(100_000));
        assert_eq!(html_to_text(&quoted), "x");
        // Formatting elements left open are re-created in every later paragraph: the elements built count.
        let open: String = (0..2_000).map(|i| format!("<b id={i}>")).collect();
        let amplified = format!("<p>{open}</p>{}", "<p>x".repeat(2_000));
        assert_eq!(
            super::html_to_text(&amplified),
            Err(ExtractError::HtmlBudget {
                what: "elements",
                limit: MAX_HTML_ELEMENTS
            })
        );
    }

    /// Feeding the parser a chunk at a time builds the same tree as parsing the whole source at once, also
    /// where a chunk ends inside a tag, an entity or a multi-byte character.
    #[test]
    fn chunks_change_nothing() {
        let unit = "<p class=\"c\">Grüße &amp; «ünïcødé» 日本語の文章 <b>bold</b><!-- note --> &eacute;t&eacute;</p>\n";
        for pad in 0..7 {
            let source = " ".repeat(pad) + &unit.repeat(3 * CHUNK / unit.len());
            let whole = Html::parse_document(&source);
            let chunked = parse_budgeted(&source).unwrap();
            assert_eq!(chunked.html(), whole.html(), "pad {pad}");
        }
    }
}
