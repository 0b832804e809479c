//! The Saturator (the paper's section 4.1): records a link's delivery opportunities as mahimahi
//! traces by keeping it backlogged; the sans-IO protocol is [`protocol`].

pub mod protocol;
pub use protocol::*;
