//! HTML escaping of markup and quotes.

use trimlab_report::escape_html;

#[test]
fn escapes_markup_and_quotes() {
    assert_eq!(escape_html("<b>\"a\" & 'b'</b>"), "&lt;b&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/b&gt;");
    assert_eq!(escape_html("plain ≤ text"), "plain ≤ text");
}
