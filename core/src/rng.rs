//! TODO(agent): rng
