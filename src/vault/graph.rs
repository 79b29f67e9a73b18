//! Link resolution and the link graph.
