//! Point clouds: `sensor_msgs/PointCloud2` and `foxglove.PointCloud` layouts.
