//! apollo reader tests against `../shared/fixtures/apollo/` (being written).
