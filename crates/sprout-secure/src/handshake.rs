//! The Noise IK handshake messages (through `snow`) and `mac1`.
