//! carla reader tests against `../shared/fixtures/carla/` (being written).
