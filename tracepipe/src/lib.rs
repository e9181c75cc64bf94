//! Safe tracefs control (private instances, events, filters) and typed decoding of the `gfs2:*` tracepoints.
