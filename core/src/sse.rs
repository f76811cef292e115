//! TODO(agent): sse
