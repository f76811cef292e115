//! TODO(agent): http
