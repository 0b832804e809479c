//! The link emulator between network namespaces (skeleton; filled in by the emulator work).
