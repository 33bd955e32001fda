//! Reading the columns writers share out of a record batch: a time column of
//! any unit as nanoseconds.

use std::sync::Arc;

use arrow_array::Array;
use arrow_cast::cast;
use arrow_schema::{DataType, TimeUnit};

use crate::error::Result;

/// A time column as nanoseconds (`Int64`): timestamps of any unit, or
/// integers taken as nanoseconds.
pub fn nanos(c: &Arc<dyn Array>) -> Result<Arc<dyn Array>> {
    Ok(match c.data_type() {
        DataType::Timestamp(TimeUnit::Nanosecond, _) => cast(c, &DataType::Int64)?,
        DataType::Timestamp(_, tz) => cast(
            &cast(c, &DataType::Timestamp(TimeUnit::Nanosecond, tz.clone()))?,
            &DataType::Int64,
        )?,
        _ => cast(c, &DataType::Int64)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Int32Array, TimestampMicrosecondArray};

    #[test]
    fn any_unit_becomes_nanoseconds() {
        let micros: Arc<dyn Array> = Arc::new(TimestampMicrosecondArray::from(vec![1, 2]));
        let n = nanos(&micros).unwrap();
        assert_eq!(n.as_primitive::<Int64Type>().values(), &[1000, 2000]);
        let ints: Arc<dyn Array> = Arc::new(Int32Array::from(vec![7]));
        let n = nanos(&ints).unwrap();
        assert_eq!(n.as_primitive::<Int64Type>().values(), &[7]);
    }
}
