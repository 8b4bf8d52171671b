//! A failed test's panic message, printed again after the daemons' logs: CI shows only the
//! tail of a failed test's output, and the logs printed while unwinding would bury it.

use std::cell::RefCell;
use std::sync::Once;

thread_local! {
    /// Per thread: the test threads of one binary fail independently.
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Chains a hook that remembers the panic's message and location (idempotent).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            // Long messages (a poll's hang guard carries a whole log) are cut to their head.
            let head: String = text.chars().take(2000).collect();
            MESSAGE.with(|m| *m.borrow_mut() = Some(format!("{at}: {head}")));
            previous(info);
        }));
    });
}

/// Prints this thread's panic message again, when it is unwinding from one.
pub fn repeat() {
    if !std::thread::panicking() {
        return;
    }
    MESSAGE.with(|m| {
        if let Some(text) = m.borrow().as_deref() {
            eprintln!("----- the test failed at {text}");
        }
    });
}
