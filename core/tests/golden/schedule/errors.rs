//! Bad inputs give typed errors that say what to change, and extreme
//! rates end or stay exact.

use super::*;

#[test]
fn bad_inputs_give_typed_errors() {
    let new = |arrival, rate, sh| Schedule::new(arrival, rate, 0, S, sh).err();
    for rate in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        for arrival in [
            Arrival::Constant,
            Arrival::Poisson,
            Arrival::Burst { size: 2 },
            Arrival::Gamma { burstiness: 1.0 },
        ] {
            assert_eq!(
                new(arrival, rate, Shard::WHOLE),
                Some(ScheduleError::InvalidRate),
                "{arrival:?} {rate}"
            );
        }
    }
    assert_eq!(
        new(Arrival::Burst { size: 0 }, 1.0, Shard::WHOLE),
        Some(ScheduleError::EmptyBurst)
    );
    for k in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(
            new(Arrival::Gamma { burstiness: k }, 1.0, Shard::WHOLE),
            Some(ScheduleError::InvalidBurstiness),
            "burstiness {k}"
        );
    }
    for sh in [
        shard(0, 0),
        shard(1, 1),
        shard(5, 3),
        shard(u32::MAX, u32::MAX),
    ] {
        assert_eq!(
            new(Arrival::Constant, 1.0, sh),
            Some(ScheduleError::InvalidShard),
            "{sh:?}"
        );
    }
    // The smallest valid inputs are accepted.
    assert!(Schedule::new(
        Arrival::Constant,
        f64::MIN_POSITIVE,
        0,
        S,
        shard(u32::MAX - 1, u32::MAX)
    )
    .is_ok());
    assert!(Schedule::new(
        Arrival::Gamma {
            burstiness: f64::MIN_POSITIVE
        },
        f64::MAX,
        0,
        0,
        Shard::WHOLE
    )
    .is_ok());
}

#[test]
fn errors_display_what_to_change() {
    assert_eq!(
        ScheduleError::InvalidRate.to_string(),
        "the rate must be a finite number of requests per second above 0"
    );
    assert_eq!(
        ScheduleError::InvalidShard.to_string(),
        "the shard index must be below the shard count, and the count at least 1"
    );
    let e: &dyn std::error::Error = &ScheduleError::InvalidBurstiness;
    assert_eq!(
        e.to_string(),
        "the gamma burstiness must be a finite number above 0 (1 is Poisson)"
    );
}

#[test]
fn extreme_rates_end_or_stay_exact() {
    // One request per ~3e299 s: only slot 0 fits.
    assert_eq!(whole(Arrival::Constant, 1e-300, 0, u64::MAX), [0]);
    assert_eq!(
        all(Arrival::Constant, 1e-300, 0, u64::MAX, shard(1, 2)),
        Vec::<u64>::new()
    );
    // A billion per second, exactly one per ns.
    assert_eq!(whole(Arrival::Constant, 1e9, 0, 5), [0, 1, 2, 3, 4]);
    // Ten billion per second: ten slots per ns, rounded half up.
    assert_eq!(whole(Arrival::Constant, 1e10, 0, 1), [0, 0, 0, 0, 0]);
}
