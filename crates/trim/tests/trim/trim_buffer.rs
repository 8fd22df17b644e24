//! Tests of src/trim_buffer.rs (moved out of the lib so the crate compiles once).

use trimlab_ftl::Lpn;
use trimlab_trim::trim_buffer::*;
use trimlab_trim::PageRange;

#[test]
fn drains_in_order_and_resumes_mid_entry() {
    let mut b = TrimBuffer::new(4);
    b.push(PageRange { start: Lpn(10), count: 3 });
    b.push(PageRange { start: Lpn(2), count: 1 });
    assert_eq!((b.len(), b.pages(), b.room()), (2, 4, 2));
    assert_eq!(b.pop_page(), Some(Lpn(10)));
    assert_eq!(b.ranges().next(), Some(&PageRange { start: Lpn(11), count: 2 }));
    let mut rest = [Lpn(0); 4];
    assert_eq!(b.pop_pages(&mut rest[..2]), 2);
    assert_eq!(b.pop_pages(&mut rest[2..]), 1);
    assert_eq!(rest[..3], [Lpn(11), Lpn(12), Lpn(2)]);
    assert!(b.is_empty());
    assert_eq!(b.pages(), 0);
}
