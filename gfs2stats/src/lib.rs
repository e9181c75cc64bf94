//! Decoding of the GFS2 debugfs `glstats` and `sbstats` (lkstats) files and the DLM timing metrics derived from them.
