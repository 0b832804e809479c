//! The data path's ChaCha20-Poly1305 comes from ring (snow's `ring-accelerated` resolver);
//! builds before it used snow's RustCrypto resolver. Same cipher and nonces, so the two must
//! interoperate: a session between one end on each seals and opens both ways, and a datagram
//! changed by one bit is refused by both.

use snow::resolvers::DefaultResolver;
use snow::{Builder, HandshakeState, StatelessTransportState};
use sprout_secure::handshake::NOISE_PARAMS;

fn builder_default() -> Builder<'static> {
    Builder::with_resolver(NOISE_PARAMS.parse().unwrap(), Box::new(DefaultResolver))
}

/// A Noise IK pair: the initiator on snow's RustCrypto resolver, the responder on this build's.
fn pair() -> (StatelessTransportState, StatelessTransportState) {
    let responder_keys = builder_default().generate_keypair().unwrap();
    let initiator_keys = builder_default().generate_keypair().unwrap();
    let mut initiator: HandshakeState = builder_default()
        .local_private_key(&initiator_keys.private)
        .unwrap()
        .remote_public_key(&responder_keys.public)
        .unwrap()
        .build_initiator()
        .unwrap();
    let mut responder: HandshakeState = Builder::new(NOISE_PARAMS.parse().unwrap())
        .local_private_key(&responder_keys.private)
        .unwrap()
        .build_responder()
        .unwrap();
    let (mut a, mut b) = ([0u8; 256], [0u8; 256]);
    let n = initiator.write_message(b"hello", &mut a).unwrap();
    responder.read_message(&a[..n], &mut b).unwrap();
    let n = responder.write_message(b"", &mut a).unwrap();
    initiator.read_message(&a[..n], &mut b).unwrap();
    (
        initiator.into_stateless_transport_mode().unwrap(),
        responder.into_stateless_transport_mode().unwrap(),
    )
}

#[test]
fn ring_and_rustcrypto_ends_seal_and_open_each_others_datagrams() {
    let (old, new) = pair();
    let payload: Vec<u8> = (0..1400u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut sealed = vec![0u8; 1500];
    let mut opened = vec![0u8; 1500];
    for counter in [0u64, 1, 2, 1 << 40] {
        let n = old.write_message(counter, &payload, &mut sealed).unwrap();
        let m = new
            .read_message(counter, &sealed[..n], &mut opened)
            .unwrap();
        assert_eq!(&opened[..m], &payload[..]);
        let n = new.write_message(counter, &payload, &mut sealed).unwrap();
        let m = old
            .read_message(counter, &sealed[..n], &mut opened)
            .unwrap();
        assert_eq!(&opened[..m], &payload[..]);
        sealed[n / 2] ^= 1;
        assert!(old
            .read_message(counter, &sealed[..n], &mut opened)
            .is_err());
        let n = old.write_message(counter, &payload, &mut sealed).unwrap();
        sealed[n - 1] ^= 0x80;
        assert!(new
            .read_message(counter, &sealed[..n], &mut opened)
            .is_err());
    }
}
