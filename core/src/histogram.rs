//! TODO(agent): histogram
