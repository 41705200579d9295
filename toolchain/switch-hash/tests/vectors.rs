//! Reference values: CRC check values ("123456789") come from the CRC catalogue as the `crc`
//! crate publishes it (`Algorithm::check`), checksums from RFC 1071, Toeplitz values from
//! Microsoft's "Verifying the RSS Hash Calculation" table, XXH64 from the xxHash reference.

use switch_hash::{Algorithm, CrcParams, CustomCrc, HashError, RandomSource, BMV2_NAMES};

const CHECK_INPUT: &[u8] = b"123456789";

fn algo(name: &str) -> Algorithm {
    Algorithm::from_bmv2_name(name).unwrap()
}

/// Deterministic pseudo-random inputs of many lengths.
fn inputs() -> Vec<Vec<u8>> {
    let r = RandomSource::new(42);
    (0..200)
        .map(|len| (0..len).map(|_| r.next() as u8).collect())
        .collect()
}

#[test]
fn names_round_trip_and_unknown_names_fail() {
    for &name in BMV2_NAMES {
        assert_eq!(algo(name).bmv2_name(), name);
    }
    assert!(Algorithm::from_bmv2_name("crc33").is_none());
    assert!(Algorithm::from_bmv2_name("CRC16").is_none());
}

#[test]
fn fixed_crcs_give_their_catalogue_check_values() {
    assert_eq!(
        algo("crc16").compute(CHECK_INPUT),
        u64::from(crc::CRC_16_ARC.check)
    );
    assert_eq!(algo("crc16").compute(CHECK_INPUT), 0xbb3d);
    assert_eq!(
        algo("crc32").compute(CHECK_INPUT),
        u64::from(crc::CRC_32_ISO_HDLC.check)
    );
    assert_eq!(algo("crc32").compute(CHECK_INPUT), 0xcbf4_3926);
    assert_eq!(
        algo("crcCCITT").compute(CHECK_INPUT),
        u64::from(crc::CRC_16_IBM_3740.check)
    );
    assert_eq!(algo("crcCCITT").compute(CHECK_INPUT), 0x29b1);
}

#[test]
fn custom_crcs_start_with_bmv2_defaults() {
    assert_eq!(
        algo("crc8_custom").compute(CHECK_INPUT),
        u64::from(crc::CRC_8_SMBUS.check)
    );
    // bmv2's 64-bit default is polynomial 0x1b reflected with init 0 and no final XOR (no
    // catalogue entry), computed independently by the crc crate.
    static BMV2_CRC64: crc::Algorithm<u64> = crc::Algorithm {
        width: 64,
        poly: 0x1b,
        init: 0,
        refin: true,
        refout: true,
        xorout: 0,
        check: 0,
        residue: 0,
    };
    let reference = crc::Crc::<u64>::new(&BMV2_CRC64);
    let c64 = algo("crc64_custom");
    let (c16, c16c) = (algo("crc16"), algo("crc16_custom"));
    let (c32, c32c) = (algo("crc32"), algo("crc32_custom"));
    for i in inputs() {
        assert_eq!(c64.compute(&i), reference.checksum(&i));
        assert_eq!(c16.compute(&i), c16c.compute(&i));
        assert_eq!(c32.compute(&i), c32c.compute(&i));
    }
}

macro_rules! catalogue {
    ($($alg:ident: $ty:ty),* $(,)?) => {
        vec![$((
            stringify!($alg),
            <$ty>::BITS,
            CrcParams {
                polynomial: crc::$alg.poly as u64,
                initial_remainder: crc::$alg.init as u64,
                final_xor_value: crc::$alg.xorout as u64,
                data_reflected: crc::$alg.refin,
                remainder_reflected: crc::$alg.refout,
            },
            crc::$alg.check as u64,
            Box::new(|d: &[u8]| crc::Crc::<$ty>::new(&crc::$alg).checksum(d) as u64)
                as Box<dyn Fn(&[u8]) -> u64>,
        )),*]
    };
}

#[test]
fn custom_crcs_match_the_catalogue_for_any_parameters() {
    let cases = catalogue!(
        CRC_8_SMBUS: u8,
        CRC_8_MAXIM_DOW: u8,
        CRC_8_AUTOSAR: u8,
        CRC_16_ARC: u16,
        CRC_16_MODBUS: u16,
        CRC_16_XMODEM: u16,
        CRC_16_KERMIT: u16,
        CRC_16_USB: u16,
        CRC_16_IBM_3740: u16,
        CRC_32_ISO_HDLC: u32,
        CRC_32_ISCSI: u32,
        CRC_32_BZIP2: u32,
        CRC_32_MPEG_2: u32,
        CRC_32_CKSUM: u32,
        CRC_64_ECMA_182: u64,
        CRC_64_XZ: u64,
        CRC_64_GO_ISO: u64,
    );
    let data = inputs();
    for (name, width, params, check, reference) in cases {
        let c = CustomCrc::new(width, params).unwrap();
        assert_eq!(c.compute(CHECK_INPUT), check, "{name}");
        for d in &data {
            assert_eq!(c.compute(d), reference(d), "{name} on {} bytes", d.len());
        }
    }
}

#[test]
fn runtime_crc_parameters_as_bmv2_cli_sets_them() {
    let modbus = CrcParams {
        polynomial: 0x8005,
        initial_remainder: 0xffff,
        final_xor_value: 0,
        data_reflected: true,
        remainder_reflected: true,
    };
    let mut c16 = algo("crc16_custom");
    c16.set_crc16_parameters(modbus).unwrap();
    assert_eq!(
        c16.compute(CHECK_INPUT),
        u64::from(crc::CRC_16_MODBUS.check)
    );

    let castagnoli = CrcParams {
        polynomial: 0x1edc_6f41,
        initial_remainder: 0xffff_ffff,
        final_xor_value: 0xffff_ffff,
        data_reflected: true,
        remainder_reflected: true,
    };
    let mut c32 = algo("crc32_custom");
    c32.set_crc32_parameters(castagnoli).unwrap();
    assert_eq!(c32.compute(CHECK_INPUT), u64::from(crc::CRC_32_ISCSI.check));

    // The commands apply to their own kind only, as bmv2's WRONG_TYPE_CALCULATION.
    assert_eq!(
        algo("crc32_custom").set_crc16_parameters(modbus),
        Err(HashError::WrongType {
            command: "set_crc16_parameters",
            expected: "crc16_custom",
            got: "crc32_custom"
        })
    );
    assert!(algo("crc16").set_crc16_parameters(modbus).is_err());
    assert!(algo("crc16_custom")
        .set_crc32_parameters(castagnoli)
        .is_err());
    assert!(algo("csum16").set_crc_parameters(modbus).is_err());
    // A 32-bit polynomial does not fit a 16-bit CRC; the old parameters stay.
    let mut c = algo("crc16_custom");
    assert_eq!(
        c.set_crc16_parameters(castagnoli),
        Err(HashError::TooWide {
            what: "polynomial",
            value: 0x1edc_6f41,
            width: 16
        })
    );
    assert_eq!(c.compute(CHECK_INPUT), 0xbb3d);
    let mut c8 = algo("crc8_custom");
    c8.set_crc_parameters(CrcParams {
        polynomial: crc::CRC_8_MAXIM_DOW.poly.into(),
        initial_remainder: 0,
        final_xor_value: 0,
        data_reflected: true,
        remainder_reflected: true,
    })
    .unwrap();
    assert_eq!(
        c8.compute(CHECK_INPUT),
        u64::from(crc::CRC_8_MAXIM_DOW.check)
    );
    assert_eq!(
        CustomCrc::new(12, castagnoli).err(),
        Some(HashError::BadCrcWidth { width: 12 })
    );
}

#[test]
fn csum16_is_the_rfc1071_checksum() {
    // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2.
    let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    for name in ["csum16", "cksum16"] {
        let a = algo(name);
        assert_eq!(a.compute(&data), u64::from(!0xddf2u16));
        // RFC 1071: the sum over data and its checksum is all ones, so its checksum is 0.
        let sum = a.compute(&data) as u16;
        let mut with = data.to_vec();
        with.extend(sum.to_be_bytes());
        assert_eq!(a.compute(&with), 0);
        // An odd length is padded with a zero byte.
        assert_eq!(
            a.compute(&data[..7]),
            a.compute(&[&data[..7], &[0]].concat())
        );
        // Zero bytes sum to zero, whose complement is ffff.
        assert_eq!(a.compute(&[]), 0xffff);
    }
    // The folded carries of a long input: 0xffff words sum to 0xffff (ones' complement -0).
    assert_eq!(algo("csum16").compute(&[0xff; 1000]), 0);
}

#[test]
fn xor16_folds_big_endian_words_padding_the_last() {
    // Expected values of the T4P4S hash test program, which follows bmv2's definition.
    let x = algo("xor16");
    assert_eq!(x.compute(&[0x12, 0x34]), 0x1234);
    assert_eq!(x.compute(&[0x12, 0x34, 0x56]), 0x4434);
    assert_eq!(x.compute(&[0x12, 0x34, 0x56, 0x78]), 0x444c);
    assert_eq!(x.compute(&[0x12, 0x34, 0x56, 0x78, 0x9a]), 0xde4c);
    assert_eq!(x.compute(&[0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc]), 0xdef0);
    let x32 = algo("xor32");
    assert_eq!(x32.compute(&[0x12, 0x34, 0x56, 0x78, 0x9a]), 0x8834_5678);
    assert_eq!(x.compute(&[]), 0);
}

#[test]
fn identity_takes_the_first_eight_bytes() {
    let id = algo("identity");
    assert_eq!(id.compute(&[0x12, 0x34, 0x56]), 0x12_3456);
    assert_eq!(id.compute(&[1, 2, 3, 4, 5, 6, 7, 8]), 0x0102_0304_0506_0708);
    assert_eq!(
        id.compute(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        0x0102_0304_0506_0708
    );
    assert_eq!(id.compute(&[]), 0);
}

#[test]
fn xxh64_matches_the_reference() {
    assert_eq!(algo("xxh64").compute(&[]), 0xef46_db37_51d8_e999);
    assert_eq!(
        algo("bmv2_hash").compute(b"abc"),
        algo("xxh64").compute(b"abc")
    );
}

#[test]
fn toeplitz_matches_the_rss_verification_suite() {
    let key = [
        0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f,
        0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
        0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
    ];
    let mut t = algo("toeplitz");
    // bmv2's initial key is zero.
    assert_eq!(t.compute(&[1, 2, 3, 4]), 0);
    t.set_toeplitz_key(&key).unwrap();
    // (source, destination, source port, destination port)
    let cases = [
        (
            [66, 9, 149, 187],
            [161, 142, 100, 80],
            2794u16,
            1766u16,
            0x323e_8fc2_u64,
            0x51cc_c178_u64,
        ),
        (
            [199, 92, 111, 2],
            [65, 69, 140, 83],
            14230,
            4739,
            0xd718_262a,
            0xc626_b0ea,
        ),
    ];
    for (src, dst, sport, dport, ip_only, with_ports) in cases {
        let ip = [src, dst].concat();
        assert_eq!(t.compute(&ip), ip_only);
        let l4 = [&ip[..], &sport.to_be_bytes(), &dport.to_be_bytes()].concat();
        assert_eq!(t.compute(&l4), with_ports);
    }
    assert_eq!(
        t.set_toeplitz_key(&[1, 2, 3]),
        Err(HashError::BadToeplitzKey { len: 3 })
    );
    assert!(algo("crc16").set_toeplitz_key(&key).is_err());
}

#[test]
fn round_robin_counts_and_consistent_remembers_inputs() {
    let rr = algo("round_robin");
    let seq: Vec<u64> = (0..4).map(|_| rr.compute(b"same")).collect();
    assert_eq!(seq, vec![0, 1, 2, 3]);
    let rc = algo("round_robin_consistent");
    assert_eq!(rc.compute(b"a"), 0);
    assert_eq!(rc.compute(b"b"), 1);
    assert_eq!(rc.compute(b"a"), 0);
    assert_eq!(rc.compute(b"c"), 2);
    // A clone carries the state on from where it was.
    assert_eq!(rr.clone().compute(b""), 4);
    assert_eq!(rc.clone().compute(b"b"), 1);
}

#[test]
fn random_is_reproducible_from_its_seed() {
    let a = Algorithm::Random(RandomSource::new(7));
    let b = Algorithm::Random(RandomSource::new(7));
    let c = Algorithm::Random(RandomSource::new(8));
    let sa: Vec<u64> = (0..16).map(|_| a.compute(b"x")).collect();
    let sb: Vec<u64> = (0..16).map(|_| b.compute(b"y")).collect();
    let sc: Vec<u64> = (0..16).map(|_| c.compute(b"x")).collect();
    assert_eq!(sa, sb);
    assert_ne!(sa, sc);
    // Not a constant: 16 draws are all distinct.
    let mut d = sa.clone();
    d.sort_unstable();
    d.dedup();
    assert_eq!(d.len(), 16);
    // Low bits are spread too (ECMP takes hash % n).
    let r = RandomSource::new(1);
    let mut buckets = [0u32; 4];
    for _ in 0..4000 {
        buckets[(r.next() % 4) as usize] += 1;
    }
    assert!(
        buckets.iter().all(|&n| (800..1200).contains(&n)),
        "{buckets:?}"
    );
}

#[test]
fn output_bits_bound_the_results() {
    let data = inputs();
    for &name in BMV2_NAMES {
        let a = algo(name);
        let bits = a.output_bits();
        for d in &data {
            let v = a.compute(d);
            assert!(
                bits == 64 || v >> bits == 0,
                "{name}: {v:x} over {bits} bits"
            );
        }
    }
}

#[test]
fn algorithms_can_be_shared_between_pipeline_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Algorithm>();
}
