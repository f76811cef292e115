//! Intended send offsets, in nanoseconds from the run start.
//!
//! (Skeleton: the contract types; the generator is filled in by the schedule work.)

/// How requests arrive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    /// Evenly spaced: offset_i = round(i * 1e9 / rate).
    Constant,
    /// Exponential gaps with mean 1/rate.
    Poisson,
    /// `size` requests at once, every size/rate seconds; the first burst at offset 0.
    Burst {
        /// Requests per burst (at least 1).
        size: u32,
    },
    /// Gamma-distributed gaps with shape `burstiness` and mean 1/rate (1.0 is Poisson).
    Gamma {
        /// The gamma shape k: larger is smoother, smaller is burstier.
        burstiness: f64,
    },
}

/// One shard `index` of `count` of a schedule (for several threads or machines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, in `0..count`.
    pub index: u32,
    /// How many shards share the schedule (at least 1).
    pub count: u32,
}

impl Shard {
    /// The whole schedule: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };
}
