//! TODO(agent): measure
