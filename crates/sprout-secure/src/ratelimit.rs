//! Token buckets that bound how many handshakes are processed per second.
