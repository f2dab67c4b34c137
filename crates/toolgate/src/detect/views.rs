//! The arena a thread's fast reader keeps a document's views in
//! ([`Held::Arena`](super::node::Held)): a payload's views (about 1 KiB
//! each, one for every object holding a key some reader looks at, tens a
//! payload) take memory the previous document used and gave back at once,
//! rather than a heap allocation and free each, which for more than a few
//! of a size at a time leave the allocator's per-thread caches for its
//! slower bins.

use std::cell::RefCell;

use bumpalo::Bump;

/// The most an arena keeps between documents: past this (a document of
/// many objects read), its memory goes back to the allocator.
const KEPT: usize = 1 << 20;

thread_local! {
    static ARENA: RefCell<Bump> = RefCell::new(Bump::new());
}

/// Run `read` with this thread's arena, emptied after it: every view made
/// in it is dropped by the time `read` returns (its result cannot borrow
/// the arena). A document read while another is being read on the same
/// thread gets no arena (`None`): its views go on the heap.
pub(crate) fn with<R>(read: impl FnOnce(Option<&Bump>) -> R) -> R {
    ARENA.with(|cell| match cell.try_borrow_mut() {
        Ok(mut arena) => {
            let out = read(Some(&arena));
            if arena.allocated_bytes() > KEPT {
                *arena = Bump::new();
            } else {
                arena.reset();
            }
            out
        }
        Err(_) => read(None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_read_within_another_gets_the_heap() {
        let inner = with(|outer| {
            assert!(outer.is_some());
            with(|inner| inner.is_none())
        });
        assert!(inner);
        // The arena is free again afterwards.
        assert!(with(|arena| arena.is_some()));
    }

    #[test]
    fn an_arena_grown_past_what_is_kept_is_given_back() {
        with(|arena| {
            let arena = arena.unwrap();
            for _ in 0..(2 * KEPT / 1024) {
                arena.alloc([0_u8; 1024]);
            }
            assert!(arena.allocated_bytes() > KEPT);
        });
        with(|arena| assert!(arena.unwrap().allocated_bytes() <= KEPT));
    }
}
