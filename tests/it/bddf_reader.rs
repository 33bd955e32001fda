//! bddf reader tests against `../shared/fixtures/bddf/` (being written).
