-- Decoded messages: sensor_msgs/Imu fields as typed columns, in a one-second window
-- (the window is pushed into the chunk index as for `messages`).
SELECT count(*) AS imu_messages,
       round(avg(linear_acceleration.z), 3) AS mean_accel_z,
       round(min(angular_velocity.z), 3) AS min_gyro_z,
       round(max(angular_velocity.z), 3) AS max_gyro_z,
       min(header.frame_id) AS frame
FROM read_topic('tests/data/demo.mcap', '/imu')
WHERE log_time >= to_timestamp(1700000002) AND log_time < to_timestamp(1700000003);

-- Transforms: one row per transform of each tf2_msgs/TFMessage.
SELECT t['header']['frame_id'] AS parent, t['child_frame_id'] AS child, count(*) AS transforms
FROM (SELECT unnest(transforms) AS t FROM read_topic('tests/data/demo.mcap', '/tf'))
GROUP BY 1, 2
ORDER BY 1, 2;
