//! Sprout over real UDP sockets (skeleton; filled in by the runtime work).
